"""``Requires-Dist`` lines (PEP 508) of the shapes real metadata uses, read without packaging.

Importing ``packaging.requirements`` costs a static check about a seventh of its time (its
tokenizer, ``packaging.markers`` and through it ``packaging.tags``, ``logging`` and
``subprocess``), and parsing a line with it 50-100 µs. A line here is one of a strict subset of
PEP 508: ``name[extras] specifiers ; marker``, each specifier ``op version`` in canonical form
(no epoch, local label, ``v`` or spelling variant), the marker ``and`` / ``or`` / parentheses over
comparisons of ``python_version``, ``python_full_version``, ``os_name``, ``sys_platform``,
``platform_machine``, ``platform_system``, ``platform_python_implementation``,
``implementation_name`` and ``extra`` with a quoted literal. Every other line, and every
evaluation this module cannot decide as packaging does (a Python version that does not parse,
an ``extra`` given as a set), is handed to packaging: the answers are packaging's
(tests/facts/test_pep508.py compares them on every ``Requires-Dist`` line of the installed
environment and on odd shapes).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from envdoctor import versions

_IDENT = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
#: ``name[extras] specifiers`` before the ``;``; the specifiers (read by ``_specifiers``) may
#: stand in parentheses (older metadata: ``triton (==2.1.0) ; platform_system == "Linux"``).
#: Small patterns read in Python: compiling one large pattern cost 5 ms a run.
_HEAD = re.compile(
    rf"({_IDENT})[ \t]*(?:\[[ \t]*({_IDENT}(?:[ \t]*,[ \t]*{_IDENT})*)[ \t]*\])?[ \t]*([^()]*|\([^()]*\))",
    re.ASCII,
)
#: One specifier of the subset, ``op version`` (``_specifier`` adds what depends on the operator).
_ONE_SPEC = versions.SPECIFIER
#: A line of the commonest shape, ``name[extras] specifiers; extra == "x"``, read in one match
#: (Python's reading of the 600 such lines of a stack cost 8 ms). Its specifier pattern is
#: looser than the subset (``>=1.*``, ``~=1``): a line holding ``.*`` or ``~=`` is checked again.
_LOOSE_SPEC = (
    r"(?:~=|==|!=|<=|>=|<|>)[ \t]*[0-9]+(?:\.[0-9]+)*(?:\.\*)?"
    r"(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?"
)
_EXTRA_MARKER = re.compile(rf"[ \t]*extra[ \t]*==[ \t]*(?:\"({_IDENT})\"|'({_IDENT})')[ \t]*", re.ASCII)
_EXTRA_LINE = re.compile(
    rf"{_IDENT}[ \t]*(?:\[[ \t]*{_IDENT}(?:[ \t]*,[ \t]*{_IDENT})*[ \t]*\])?[ \t]*"
    rf"(?:{_LOOSE_SPEC}(?:[ \t]*,[ \t]*{_LOOSE_SPEC})*)?[ \t]*;"
    rf"[ \t]*extra[ \t]*==[ \t]*(?:\"({_IDENT})\"|'({_IDENT})')[ \t]*",
    re.ASCII,
)

#: Marker variables read here: compared as versions (packaging's MARKERS_REQUIRING_VERSION that
#: a machine always has as a version) or as strings.
_VERSION_VARS = ("python_version", "python_full_version")
_STRING_VARS = (
    "os_name",
    "sys_platform",
    "platform_machine",
    "platform_system",
    "platform_python_implementation",
    "implementation_name",
    "extra",
)
_TOKEN = re.compile(
    r"[ \t]*(?:(\()|(\))|\b(and|or)\b|\b(" + "|".join(_VERSION_VARS + _STRING_VARS) + r")\b"
    r"|(===|==|~=|!=|<=|>=|<|>)|\"([^\"]*)\"|'([^']*)')",
    re.ASCII,
)


if TYPE_CHECKING:  # an annotation only (creating a Protocol class costs a check time)

    class MarkerLike(Protocol):
        """What callers use of a marker: packaging's ``Marker`` or this module's."""

        def evaluate(self, environment: Mapping[str, Any] | None = None) -> bool: ...


class Requirement:
    """A parsed requirement, with the attributes callers read of packaging's ``Requirement``.
    ``specifier`` is the text packaging's ``str(req.specifier)`` gives (sorted, deduplicated).
    A plain class: creating a dataclass costs a check about 1 ms at import."""

    __slots__ = ("name", "extras", "specifier", "marker", "url")

    def __init__(
        self,
        name: str,
        extras: frozenset[str],
        specifier: str,
        marker: MarkerLike | None,
        url: str | None = None,
    ) -> None:
        self.name, self.extras, self.specifier, self.marker, self.url = name, extras, specifier, marker, url

    def __repr__(self) -> str:
        extras = sorted(self.extras)
        return f"<Requirement({self.name!r}, {extras}, {self.specifier!r}, {self.marker}, {self.url})>"


class InvalidRequirement(ValueError):
    """Not a PEP 508 requirement: packaging's message."""


class _Undecided(Exception):
    """An evaluation this module does not decide itself: packaging does."""


class Marker:
    """A marker of the subset, parsed; ``str()`` is its text as written. Its tree: a comparison
    ``("cmp", (variable, operator, literal))`` or a group ``("and" | "or", (nodes...))``."""

    __slots__ = ("text", "tree")

    def __init__(self, text: str, tree: tuple[str, tuple[Any, ...]]) -> None:
        self.text, self.tree = text, tree

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<Marker({self.text!r})>"

    def evaluate(self, environment: Mapping[str, Any] | None = None) -> bool:
        """As packaging's ``Marker.evaluate`` (context "metadata"): ``environment`` over this
        interpreter's; ``extra`` normalized; undecidable cases go to packaging."""
        env: dict[str, Any] = {**default_environment(), "extra": ""}
        if environment is not None:
            env.update(environment)
        try:
            extra = env.get("extra")
            if extra is None or extra == "":
                env["extra"] = ""
            elif isinstance(extra, str):
                env["extra"] = _canonical_name(extra)
            else:
                raise _Undecided
            full = env.get("python_full_version")
            if isinstance(full, str) and full.endswith("+"):
                env["python_full_version"] = full + "local"
            return _evaluate(self.tree, env)
        except _Undecided:
            return _packaging_marker(self.text).evaluate(environment)


def _evaluate(node: tuple[str, tuple[Any, ...]], env: dict[str, Any]) -> bool:
    kind, items = node
    if kind == "cmp":
        return _compare(items[0], items[1], items[2], env)
    results = [_evaluate(item, env) for item in items]  # every one, as packaging: none skipped
    return all(results) if kind == "and" else any(results)


def _compare(var: str, op: str, literal: str, env: dict[str, Any]) -> bool:
    value = env.get(var)
    if not isinstance(value, str):
        raise _Undecided  # missing or a set: packaging raises or decides set-wide
    if var in _VERSION_VARS:
        found = versions.contains(op + literal, value)
        if found is None:  # a value that does not parse
            raise _Undecided
        return found
    return value == literal if op == "==" else value != literal


def _canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse_marker(text: str) -> tuple[str, tuple[Any, ...]] | None:
    """The tree of a marker of the subset, or None (packaging reads it)."""
    tokens: list[tuple[int, str]] = []
    pos, end = 0, len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip(" \t") == "":
                break
            return None
        group = m.lastindex or 0
        value = m.group(group)
        tokens.append((group, value))
        pos = m.end()
    node, rest = _or(tokens, 0)
    return node if node is not None and rest == len(tokens) else None


def _or(tokens: list[tuple[int, str]], i: int) -> tuple[Any, int]:
    items = []
    while True:
        node, i = _and(tokens, i)
        if node is None:
            return None, i
        items.append(node)
        if i < len(tokens) and tokens[i] == (3, "or"):
            i += 1
            continue
        return (items[0] if len(items) == 1 else ("or", tuple(items))), i


def _and(tokens: list[tuple[int, str]], i: int) -> tuple[Any, int]:
    items = []
    while True:
        node, i = _atom(tokens, i)
        if node is None:
            return None, i
        items.append(node)
        if i < len(tokens) and tokens[i] == (3, "and"):
            i += 1
            continue
        return (items[0] if len(items) == 1 else ("and", tuple(items))), i


def _atom(tokens: list[tuple[int, str]], i: int) -> tuple[Any, int]:
    if i < len(tokens) and tokens[i][0] == 1:
        node, i = _or(tokens, i + 1)
        if node is None or i >= len(tokens) or tokens[i][0] != 2:
            return None, i
        return node, i + 1
    if i + 3 > len(tokens):
        return None, i
    (k1, left), (k2, op), (k3, right) = tokens[i : i + 3]
    if k2 != 5 or op not in ("==", "!=", "<", "<=", ">", ">="):
        return None, i
    if k1 == 4 and k3 in (6, 7):
        var, literal = left, right
    elif k1 in (6, 7) and k3 == 4 and right in _STRING_VARS and op in ("==", "!="):
        var, literal = right, left  # "linux" == sys_platform: a string comparison is symmetric
    else:
        return None, i
    if var in _VERSION_VARS:
        if _specifier(op + literal) is None:
            return None, i
    elif op not in ("==", "!="):
        return None, i
    if var == "extra":
        literal = _canonical_name(literal)
    return ("cmp", (var, op, literal)), i + 3


def _specifier(text: str) -> tuple[str, str, tuple[str, str]] | None:
    """``(op, version, canonical)`` of one specifier of the subset, or None. ``canonical`` is
    what packaging tells specifiers apart by: the version normalized, its release's trailing
    zeros dropped but for ``~=`` (a wildcard as written)."""
    m = _ONE_SPEC.fullmatch(text)
    if m is None or len(text) > versions._DIGITS_READ_HERE:
        return None  # a number past Python's int-string limit: packaging reads the line
    op, release, star, letters, pre, post, dev = m.groups()
    version = text[m.start(2) :]
    if star:
        return (op, version, (op, version)) if op in ("==", "!=") else None
    parts = [int(x) for x in release.split(".")]
    if op == "~=":
        if len(parts) < 2:
            return None
    else:
        while len(parts) > 1 and parts[-1] == 0:
            parts.pop()
    canonical = ".".join(map(str, parts))
    if letters:
        canonical += f"{letters}{int(pre)}"
    if post is not None:
        canonical += f".post{int(post)}"
    if dev is not None:
        canonical += f".dev{int(dev)}"
    return op, version, (op, canonical)


def _specifiers(text: str) -> str | None:
    """``str(SpecifierSet(...))`` of the specifiers of a line (in parentheses or not) when all
    are of the subset: each ``op version`` without white space, sorted, the first of those
    packaging deems equal kept; None otherwise."""
    text = text.strip(" \t")
    if text.startswith("("):
        text = text[1:-1].strip(" \t")
        if not text:
            return None  # ``a ()``: packaging's call
    if not text:
        return ""
    specs = []
    for part in text.split(","):
        spec = _specifier(part.strip(" \t"))
        if spec is None:
            return None
        specs.append(spec)
    seen: set[tuple[str, str]] = set()
    out = []
    for op, version, canonical in sorted(specs, key=lambda s: s[0] + s[1]):
        if canonical not in seen:
            seen.add(canonical)
            out.append(op + version)
    return ",".join(out)


def _head(text: str) -> tuple[str, str | None, str] | None:
    """``(name, extras, specifier text)`` of what stands before a line's ``;``, or None."""
    m = _HEAD.fullmatch(text.rstrip(" \t"))
    if m is None:
        return None
    specs = _specifiers(m.group(3))
    return None if specs is None else (m.group(1), m.group(2), specs)


@lru_cache(maxsize=8192)
def extra_only(line: str) -> str | None:
    """The extra (normalized) that ``line`` applies to, when it is a valid requirement of the
    subset whose only marker is ``extra == "x"``; None for any other line (parse it to know).
    The commonest shape (590 of a TRL + vLLM stack's 680 lines): it needs no parse to be known
    valid, nor to know that it applies to no extra a run installs."""
    m = _EXTRA_LINE.fullmatch(line)
    if m is None:  # ``name (specifiers); extra == "x"`` (older metadata) is read in Python
        head, _, marker = line.partition(";")
        m = _EXTRA_MARKER.fullmatch(marker) if "(" in head else None
        return _canonical_name(m.group(1) or m.group(2)) if m and _head(head) is not None else None
    if (".*" in line or "~=" in line) and _head(line.partition(";")[0]) is None:
        return None  # a wildcard after an ordering operator, ``~=`` with one number
    return _canonical_name(m.group(1) or m.group(2))


@lru_cache(maxsize=8192)
def parse(line: str) -> Requirement:
    """``line`` as a ``Requirement``; ``InvalidRequirement`` (packaging's message) when it is
    not PEP 508. packaging parses every line outside the subset."""
    head, sep, marker_text = line.partition(";")
    parts = _head(head)
    marker_text = marker_text.strip(" \t")
    tree = _parse_marker(marker_text) if marker_text else None
    if parts is not None and (not sep or tree is not None):
        name, extras, specifier = parts
        return Requirement(
            name=name,
            extras=frozenset(e.strip(" \t") for e in extras.split(",")) if extras else frozenset(),
            specifier=specifier,
            marker=Marker(marker_text, tree) if tree is not None else None,
        )
    from packaging.requirements import InvalidRequirement as Invalid
    from packaging.requirements import Requirement as Parsed

    try:
        req = Parsed(line)
        specifier = str(req.specifier)
    except Invalid as exc:
        raise InvalidRequirement(str(exc)) from None
    except ValueError:  # packaging's int() of a number past Python's int-string limit
        raise InvalidRequirement("a version number of more than 4,300 digits") from None
    return Requirement(
        name=req.name,
        extras=frozenset(req.extras),
        specifier=specifier,
        marker=req.marker,
        url=req.url,
    )


@cache
def _packaging_marker(text: str) -> MarkerLike:
    from packaging.markers import Marker as Parsed

    return Parsed(text)


@cache
def _default_environment() -> dict[str, str]:
    import platform

    info = sys.implementation.version
    implementation_version = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        implementation_version += info.releaselevel[0] + str(info.serial)
    return {
        "implementation_name": sys.implementation.name,
        "implementation_version": implementation_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def default_environment() -> dict[str, str]:
    """packaging's ``default_environment()``: the markers' values for this interpreter (a copy)."""
    return dict(_default_environment())
