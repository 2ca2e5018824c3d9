"""Bounded parsing of the files envdoctor reads: YAML/JSON config files and snapshot JSON, every
problem an ``InputError`` naming the file.

Below facts and plan (both read files with it); it imports only ``envdoctor.errors``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import yaml

from envdoctor.errors import InputError, InvalidSyntax, UnreadableInput, read_input_text

MAX_BYTES = 8 * 1024 * 1024
#: Deeper than any real config; libyaml's C composer recurses without a limit and overflows the
#: C stack (a segfault, not a RecursionError) on some 50,000 nested levels.
MAX_DEPTH = 100
ACCELERATE_KEYS = {
    "compute_environment",
    "distributed_type",
    "num_processes",
    "gpu_ids",
    "machine_rank",
    "num_machines",
    "mixed_precision",
    "deepspeed_config",
    "fsdp_config",
    "use_cpu",
    "main_training_function",
    "rdzv_backend",
}
GRPO_KEYS = {
    "num_generations",
    "use_vllm",
    "vllm_mode",
    "vllm_device",
    "beta",
    "max_completion_length",
    "max_prompt_length",
    "reward_weights",
    "loss_type",
    "vllm_gpu_memory_utilization",
    "per_device_train_batch_size",
    "learning_rate",
    "output_dir",
    "model_name_or_path",
    "generation_batch_size",
    "steps_per_generation",
}

#: Nodes that aliases may add when expanded ("billion laughs": 10 aliases of 10 aliases of …
#: stay a small graph for the parser, but every reader that walks the values walks 10^9 nodes).
MAX_ALIAS_NODES = 10_000
#: Characters of one number: converting is checked before it happens (a million-digit int
#: takes seconds; Python's own 4,300-digit limit stays in force for everything else).
MAX_NUMBER_CHARS = 40
#: Digits of a JSON number (no snapshot value comes near); converting is checked before, not after.
MAX_JSON_DIGITS = 40

try:  # the C parser is several times faster; both are safe loaders
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Base = yaml.SafeLoader


class _NumberTooLong(yaml.YAMLError):  # type: ignore[misc]  # PyYAML is untyped here: Any
    def __init__(self, node: yaml.Node) -> None:
        super().__init__()
        self.problem = f"a number of {len(str(node.value)):,} characters (at most {MAX_NUMBER_CHARS})"
        self.problem_mark = node.start_mark


#: Duplicate keys recorded per document (more are counted, not kept).
MAX_DUPLICATES = 50


class _Loader(_Base):  # type: ignore[misc]  # a subclass of Any (PyYAML is untyped here)
    """The safe loader with numbers bounded in length before conversion; it records keys set
    twice in one mapping (``duplicates``) without changing the values (PyYAML keeps the last)."""

    def construct_document(self, node: yaml.Node) -> Any:
        self.duplicates = duplicate_keys(node)
        return super().construct_document(node)


def _shown(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return str(node.value)[:80]
    return "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"


#: how many implicit booleans / nulls ``implicit_scalars`` reports at most
MAX_IMPLICIT = 50
_IMPLICIT_TAGS = {"tag:yaml.org,2002:bool": "bool", "tag:yaml.org,2002:null": "null"}


def implicit_scalars(text: str) -> list[dict[str, Any]]:
    """The mapping values of a YAML text written as an unquoted word that ``yaml.safe_load``
    reads as a boolean or None (``no``, ``on``, ``~``, ``null``; YAML 1.1 as PyYAML resolves it):
    ``{"path": keys from the top, "word", "kind": "bool" | "null", "line" (1-based), "column"}``.
    An empty value (``key:``) is not a word; an invalid text gives []. Bounded by ``MAX_IMPLICIT``."""
    found: list[dict[str, Any]] = []
    try:
        loader = _Base(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except (yaml.YAMLError, RecursionError, ValueError):
        return []
    seen: set[int] = set()
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())] if root is not None else []
    while stack and len(found) < MAX_IMPLICIT:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, path) for item in reversed(node.value))
            continue
        if not isinstance(node, yaml.MappingNode):
            continue
        for key, value in reversed(node.value):
            if not isinstance(key, yaml.ScalarNode):
                continue
            here = (*path, str(key.value))
            if isinstance(value, yaml.ScalarNode):
                kind = _IMPLICIT_TAGS.get(value.tag)
                if kind and not value.style and value.value and value.value.lower() not in ("true", "false"):
                    found.append(
                        {
                            "path": here,
                            "word": value.value,
                            "kind": kind,
                            "line": value.start_mark.line + 1,
                            "column": value.start_mark.column,
                        }
                    )
            else:
                stack.append((value, here))
    return sorted(found, key=lambda f: f["line"])


def entry_line(text: str, path: tuple[str, ...]) -> int | None:
    """The 1-based line of ``path``'s ``key: value`` in a YAML text (keys from the top), where
    the entry takes that one line (block style, a scalar value on the key's line); None where it
    is absent, spans lines, sits in a flow mapping, or the text does not compose."""
    try:
        loader = _Base(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    for i, name in enumerate(path):
        if not isinstance(node, yaml.MappingNode) or node.flow_style:
            return None
        found = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and str(k.value) == name]
        if len(found) != 1:
            return None
        key, node = found[0]
        if i == len(path) - 1:
            end = node.end_mark.line - (1 if node.end_mark.column == 0 else 0)
            if not isinstance(node, yaml.ScalarNode) or end != key.start_mark.line:
                return None
            return int(key.start_mark.line) + 1
    return None


def duplicate_keys(root: yaml.Node) -> list[dict[str, Any]]:
    """Keys given twice in one mapping of a composed YAML document: ``{"key": dotted path,
    "first_line", "last_line" (1-based), "first", "last" (the values as written), "same"}``;
    the last one is what ``yaml.safe_load`` keeps. Bounded by ``MAX_DUPLICATES``; each node is
    walked once (aliases are not walked again); ``<<`` merge keys are YAML's own override."""
    found: list[dict[str, Any]] = []
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack and len(found) < MAX_DUPLICATES:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, path) for item in reversed(node.value))
            continue
        if not isinstance(node, yaml.MappingNode):
            continue
        first: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        starts = [k.start_mark.line for k, _ in node.value]
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                continue
            name = str(key.value)
            if name in first and len(found) < MAX_DUPLICATES:
                k0, v0 = first[name]
                same = (
                    isinstance(v0, yaml.ScalarNode)
                    and isinstance(value, yaml.ScalarNode)
                    and v0.value == value.value
                    and v0.tag == value.tag
                )
                found.append(
                    {
                        "key": f"{path}.{name}" if path else name,
                        "first_line": k0.start_mark.line + 1,
                        "last_line": key.start_mark.line + 1,
                        "first": _shown(v0),
                        "last": _shown(value),
                        "same": same,
                        # the line of the next key after the first (None: a flow mapping)
                        "first_next": _next_start(k0, starts, node.flow_style),
                    }
                )
            first[name] = (key, value)
            stack.append((value, f"{path}.{name}" if path else name))
    return sorted(found, key=lambda d: d["last_line"])


def _next_start(key: yaml.Node, starts: list[int], flow: bool | None) -> int | None:
    line = key.start_mark.line
    after = [s for s in starts if s > line]
    return None if flow or not after or starts.count(line) > 1 else min(after) + 1


def entry_lines(text: str, dup: dict[str, Any]) -> list[str] | None:
    """The lines of the first ``key: value`` of a key set twice (``duplicate_keys``), up to the
    next key's line without the blank and comment lines before it, as written in ``text``; None
    where the entry shares a line with another (a flow mapping)."""
    end = dup.get("first_next")
    if not end:
        return None
    lines = text.splitlines()[dup["first_line"] - 1 : end - 1]
    while len(lines) > 1 and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    return lines or None


def _bounded(tag: str) -> None:
    original = _Base.yaml_constructors[tag]

    def construct(loader: Any, node: yaml.Node) -> Any:
        if len(str(node.value)) > MAX_NUMBER_CHARS:
            raise _NumberTooLong(node)
        return original(loader, node)

    _Loader.add_constructor(tag, construct)


for _tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
    _bounded(_tag)


def read_mapping(
    path: str | os.PathLike[str], what: str, duplicates: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Parse a YAML/JSON file that must hold a mapping; ``what`` names it in errors;
    ``duplicates`` (when given) receives the keys set twice (``duplicate_keys``)."""
    source = f"{what} {path}"
    text = read_input_text(path, source, MAX_BYTES)
    return parse_mapping(text, source, str(path).endswith(".json"), duplicates)


def parse_mapping(
    text: str, source: str, is_json: bool = False, duplicates: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Parse YAML (or JSON) text that must hold a mapping; ``source`` names it in errors;
    ``duplicates`` (when given, YAML only) receives the keys set twice in one mapping."""
    try:
        if is_json:
            data = parse_json(text, source, constants=True)
        else:
            check_structure(text, source)
            loader = _Loader(text)
            try:
                data = loader.get_single_data()
            finally:
                loader.dispose()
            if duplicates is not None:
                found = getattr(loader, "duplicates", [])
                duplicates.extend({**d, "first_text": entry_lines(text, d)} for d in found)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if isinstance(exc, _NumberTooLong):
            raise UnreadableInput(source, f"{where}: {problem}".lstrip(" :")) from None
        error = InvalidSyntax if mentions_config_keys(text) else InputError
        raise error(source, f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise UnreadableInput(source, "nested too deeply") from None
    except ValueError as exc:  # a number over Python's int-string limit (4,300 digits)
        raise UnreadableInput(source, f"unreadable number: {str(exc).split(';')[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(source, f"expected a mapping of keys to values, got {type(data).__name__}")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise InputError(source, f"keys must be strings, got {bad[0]!r}")
    return data


_LINE_START = re.compile(r"(?m)^([ \t]*)((?:[-?][ \t]+)*)")


def _depth_bound(text: str) -> int:
    """An upper bound of YAML nesting, in one linear scan: a block collection nests by
    indentation or by a ``- `` / ``? `` on the same line; a flow one needs ``[`` or ``{``."""
    flow = text.count("[") + text.count("{")
    if flow > MAX_DEPTH:
        return flow
    block = max(
        (len(m.group(1)) + m.group(2).count("-") + m.group(2).count("?") for m in _LINE_START.finditer(text)),
        default=0,
    )
    return flow + block + 1


def check_structure(text: str, source: str) -> None:
    """Refuse YAML nested deeper than ``MAX_DEPTH`` or whose aliases expand to more than
    ``MAX_ALIAS_NODES`` nodes, on YAML's event stream, before anything is composed (the
    stream is flat: reading it cannot overflow, and aliases are counted, not expanded)."""
    if "*" not in text and _depth_bound(text) <= MAX_DEPTH:
        return  # no alias, and too shallow to reach the limit (most configs: no event pass)
    stack: list[list[Any]] = []  # per open collection: [nodes inside, depth below, anchor]
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, depth) once expanded
    expanded = 0
    for event in yaml.parse(text, Loader=_Base):
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([1, 0, event.anchor])
            if len(stack) > MAX_DEPTH:
                raise UnreadableInput(
                    source, f"nested more than {MAX_DEPTH} levels deep (at line {event.start_mark.line + 1})"
                )
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            nodes, below, anchor = stack.pop()
            size = (nodes, below + 1)
            if anchor:
                sizes[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = (1, 0)
            if event.anchor:
                sizes[event.anchor] = size
        elif isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor or "", (1, 0))
            expanded += size[0]
            if expanded > MAX_ALIAS_NODES:
                raise UnreadableInput(
                    source,
                    f"aliases (*{event.anchor}) expand to more than "
                    f"{MAX_ALIAS_NODES:,} values (at line "
                    f"{event.start_mark.line + 1}): not a real config",
                )
            if len(stack) + size[1] > MAX_DEPTH:
                raise UnreadableInput(
                    source,
                    f"aliases nest more than {MAX_DEPTH} levels deep (at line {event.start_mark.line + 1})",
                )
        else:
            continue
        if stack:
            stack[-1][0] += size[0]
            stack[-1][1] = max(stack[-1][1], size[1])


def mentions_config_keys(text: str) -> bool:
    """Whether text that failed to parse still names GRPO or accelerate keys (``use_vllm:``):
    a broken config, not some other YAML/JSON file (a Helm template, a tsconfig)."""
    keys = "|".join(sorted(GRPO_KEYS | ACCELERATE_KEYS))
    return re.search(rf"(?m)^[ \t\-]*[\"']?(?:{keys})[\"']?[ \t]*:", text[:1_000_000]) is not None


class _JsonNumberTooLong(ValueError):
    pass


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:  # checked before conversion (quadratic in digits)
        raise _JsonNumberTooLong(f"a number of {len(text):,} digits (at most {MAX_JSON_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    if len(text) > 4 * MAX_JSON_DIGITS:
        raise _JsonNumberTooLong(f"a number written with {len(text):,} characters")
    return float(text)


def _constant(name: str) -> float:
    raise _JsonNumberTooLong(f"{name} is not a number a snapshot holds")


def _ieee(name: str) -> float:
    return float(name)  # NaN, Infinity, -Infinity: what Python's json.dumps writes for them


def parse_json(text: str, source: str, constants: bool = False) -> Any:
    """JSON with every number bounded before conversion; problems are ``InputError``s.
    ``constants``: NaN / Infinity are read as floats (a config or a repository's results file,
    as Python writes them), not refused (a snapshot holds none)."""
    try:
        return json.loads(
            text, parse_int=_int, parse_float=_float, parse_constant=_ieee if constants else _constant
        )
    except _JsonNumberTooLong as exc:
        raise UnreadableInput(source, str(exc)) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        error = InvalidSyntax if mentions_config_keys(text) else InputError
        raise error(source, f"invalid JSON at {where}: {exc.msg}") from None
    except RecursionError:
        raise UnreadableInput(source, "JSON nested too deeply") from None
    except ValueError as exc:
        raise UnreadableInput(source, f"unreadable number: {str(exc).split(';')[0]}") from None
