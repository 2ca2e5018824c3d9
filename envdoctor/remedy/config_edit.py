"""Config changes written into the config file's own text: comments, order and layout kept.

YAML is edited line by line (a round trip through a YAML library drops comments); JSON is
loaded and written back in its key order and indent. Every edit is read back with the
parser ``check`` uses and must give exactly the mapping wanted, else nothing is written.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from envdoctor.errors import InputError
from envdoctor.parsing import parse_mapping

_PLAIN = re.compile(r"[A-Za-z_./][\w./:@+-]*")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def yaml_scalar(value: Any) -> str:
    """``value`` as one YAML flow value (a plain word where it reads back as that string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _RESERVED:
        return value
    return json.dumps(value)  # JSON is YAML's flow style: lists, dicts, quoted strings


def _key_line(line: str) -> str | None:
    """The top-level key a line sets (``key: value``, ``"key": value``), or None."""
    m = re.match(r"""^(?:"([^"]+)"|'([^']+)'|([A-Za-z_][\w.-]*))\s*:(?:\s|$)""", line)
    return (m.group(1) or m.group(2) or m.group(3)) if m else None


def _value_end(lines: list[str], i: int) -> int:
    """The index after the value of the key on line ``i`` (its block lines included)."""
    j = i + 1
    while j < len(lines):
        text = lines[j]
        if text.strip() == "" or text.startswith((" ", "\t")) or text.startswith("- "):
            j += 1
            continue
        if text.lstrip().startswith("#") and j + 1 < len(lines) and lines[j + 1].startswith((" ", "\t")):
            j += 1
            continue
        break
    while j > i + 1 and lines[j - 1].strip() == "":  # blank lines after the value stay
        j -= 1
    return j


def _comment(line: str) -> str:
    """A trailing ``  # comment`` of a one-line value (outside quotes), or ''."""
    in_s = in_d = False
    for i, ch in enumerate(line):
        if ch == "'" and not in_d:
            in_s = not in_s
        elif ch == '"' and not in_s:
            in_d = not in_d
        elif ch == "#" and not in_s and not in_d and i > 0 and line[i - 1] in " \t":
            return "  " + line[i:].rstrip("\n")
    return ""


def edit_yaml(text: str, config_set: dict[str, Any], config_remove: tuple[str, ...] | list[str]) -> str:
    """``text`` with top-level keys set and removed, every other line as it was."""
    lines = text.splitlines(keepends=True)
    present = {_key_line(line) for line in lines}
    new_keys = [k for k in config_set if k not in present]
    values = parse_mapping(text, "config", is_json=False) if new_keys and config_remove else {}
    for key in list(config_remove):  # a rename (same value): the new key takes the old line
        new = next((k for k in new_keys if key in values and values[key] == config_set[k]), None)
        if new is None:
            continue
        for i, line in enumerate(lines):
            if _key_line(line) == key:
                new_keys.remove(new)
                lines[i : _value_end(lines, i)] = [f"{new}: {yaml_scalar(config_set[new])}{_comment(line)}\n"]
                config_remove = [k for k in config_remove if k != key]
                break
    for key in config_remove:
        for i, line in enumerate(lines):
            if _key_line(line) == key:
                del lines[i : _value_end(lines, i)]
                break
    for key, value in config_set.items():
        for i, line in enumerate(lines):
            if _key_line(line) == key:
                end = _value_end(lines, i)
                head = line.split(":", 1)[0]
                lines[i:end] = [f"{head}: {yaml_scalar(value)}{_comment(line)}\n"]
                break
        else:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines.append(f"{key}: {yaml_scalar(value)}\n")
    return "".join(lines)


def edit_json(text: str, config_set: dict[str, Any], config_remove: tuple[str, ...] | list[str]) -> str:
    """``text`` (a JSON object) with keys set and removed, in its key order and indent."""
    data = json.loads(text)
    for key in config_remove:
        data.pop(key, None)
    data.update(config_set)
    second = text.splitlines()[1] if len(text.splitlines()) > 1 else ""
    indent = len(second) - len(second.lstrip(" ")) or None
    return json.dumps(data, indent=indent) + ("\n" if text.endswith("\n") else "")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _child(lines: list[str], start: int, end: int, name: str) -> tuple[int | None, int]:
    """The line in ``lines[start:end]`` (a block) that sets key ``name`` at the block's own
    indent, and that indent (the first key line's; -1 for an empty block)."""
    indent = -1
    for i in range(start, end):
        text = lines[i]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if indent < 0:
            indent = _indent(text)
        if _indent(text) == indent and _key_line(text.lstrip(" ")) == name:
            return i, indent
    return None, indent


def _block_end(lines: list[str], i: int) -> int:
    """The index after the value of the (indented) key on line ``i``."""
    own = _indent(lines[i])
    j = i + 1
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > own):
        j += 1
    while j > i + 1 and not lines[j - 1].strip():
        j -= 1
    return j


def edit_yaml_nested(
    text: str, places: dict[str, tuple[str, ...]], config_set: dict[str, Any], remove: list[str]
) -> str:
    """``text`` with keys set and removed at the nested places ``places`` gives them
    (``num_generations`` at ("training", "num_generations")), every other line as it was."""
    lines = text.splitlines(keepends=True)
    for key in [*config_set, *remove]:
        path = places[key]
        start, end, at, indent = 0, len(lines), None, 0
        for n, part in enumerate(path):
            if n == 0:
                at = next((i for i, x in enumerate(lines) if _key_line(x) == part), None)
            else:
                at, indent = _child(lines, start, end, part)
            if at is None:
                break
            if n < len(path) - 1:
                start, end = at + 1, _block_end(lines, at)
        if at is None and key in config_set and start and n == len(path) - 1:  # add it to its section
            child = indent if indent >= 0 else _indent(lines[start - 1]) + 2
            lines.insert(start, f"{' ' * child}{path[-1]}: {yaml_scalar(config_set[key])}\n")
        elif at is not None and key in config_set:
            head = lines[at].split(":", 1)[0]
            lines[at : _block_end(lines, at)] = [
                f"{head}: {yaml_scalar(config_set[key])}{_comment(lines[at])}\n"
            ]
        elif at is not None:
            del lines[at : _block_end(lines, at)]
    return "".join(lines)


def _set_at(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        inner = data.get(part)
        data = inner if isinstance(inner, dict) else data.setdefault(part, {})
    if value is _CUT:
        data.pop(path[-1], None)
    else:
        data[path[-1]] = value


_CUT = object()


def edit_config(
    text: str,
    path: str,
    config_set: dict[str, Any],
    config_remove: tuple[str, ...] | list[str],
    places: dict[str, tuple[str, ...]] | None = None,
) -> str:
    """The config file's new text; refused (InputError naming the file) when the edit would
    not read back as the mapping wanted. ``places``: keys the training script reads from a
    nested place of the file itself (``conf["training"]["num_generations"]``): edited there."""
    is_json = path.lower().endswith(".json") or text.lstrip().startswith("{")  # JSON is YAML too
    if path.lower().endswith(".toml"):
        raise InputError(path, "envdoctor fix edits YAML and JSON configs only; apply the changes by hand")
    old = parse_mapping(text, path, is_json=is_json)
    nested = {
        k: p for k, p in (places or {}).items() if len(p) > 1 and (k in config_set or k in config_remove)
    }
    if nested and is_json:
        raise InputError(
            path, "envdoctor fix edits nested keys of YAML configs only; apply the changes by hand"
        )
    flat_set = {k: v for k, v in config_set.items() if k not in nested}
    flat_remove = [k for k in config_remove if k not in nested]
    new_text = (edit_json if is_json else edit_yaml)(text, flat_set, flat_remove)
    if nested:
        new_text = edit_yaml_nested(
            new_text,
            nested,
            {k: v for k, v in config_set.items() if k in nested},
            [k for k in config_remove if k in nested],
        )
    wanted = {k: v for k, v in old.items() if k not in flat_remove}
    wanted.update(flat_set)
    if nested:
        wanted = copy.deepcopy(wanted)
        for k, p in nested.items():
            _set_at(wanted, p, config_set.get(k, _CUT))
    if parse_mapping(new_text, path, is_json=is_json) != wanted:
        raise InputError(path, "could not edit it without changing other keys; apply the changes by hand")
    return new_text
