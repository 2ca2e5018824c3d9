"""Keys a repository's own Python declares, for the hook (issue 39): the fields of its
dataclasses handed to ``HfArgumentParser`` / ``TrlParser`` together with a GRPOConfig, and of its
GRPOConfig subclasses (open-r1's declares ``hub_model_revision``). Read as ``script_reader`` reads
one file (syntax tree only; nothing imported or run); the walk is bounded: no virtualenv, ``.git``
or ``node_modules``; capped in files, bytes and time.
"""

from __future__ import annotations

import ast
import bisect
import functools
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envdoctor.plan.script_reader import (
    CONFIG_CLASS,
    MAX_IMPORT_DEPTH,
    DataClass,
    SourceFacts,
    parse_source,
    read_source,
    record,
    scan_call,
)

#: the repository walk: files looked at, files parsed, bytes read, seconds spent
REPO_MAX_FILES = 5000
REPO_MAX_PARSED = 800
REPO_MAX_BYTES = 48 * 1024 * 1024
REPO_MAX_SECONDS = 5.0
#: folders the repository walk never enters (virtualenvs are found by their pyvenv.cfg too)
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "site-packages",
        "dist-packages",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".eggs",
        "build",
        "dist",
        "wandb",
        "outputs",
    }
)
#: words a file must hold for the repository walk to parse it
_WORTH_PARSING = (b"GRPOConfig", b"ArgumentParser", b"TrlParser", b"dataclass")


def _scan_light(tree: ast.Module, path: str, data: bytes) -> SourceFacts:
    """Imports, classes and parser calls only, for the repository walk: statements are walked;
    the expressions of a statement only when one of its lines names a parser."""
    marked = [n for n, line in enumerate(data.splitlines(), 1) if b"Parser" in line]
    mod = SourceFacts(path=path)
    stack: list[Any] = list(tree.body)
    while stack:
        node = stack.pop()
        if record(mod, node):
            if isinstance(node, ast.ClassDef):
                stack.extend(node.body)
            continue
        bodies = [getattr(node, f, None) or [] for f in ("body", "orelse", "finalbody", "handlers", "cases")]
        if any(bodies):
            stack.extend(n for body in bodies for n in body)
            continue
        first, last = getattr(node, "lineno", 0), getattr(node, "end_lineno", None) or 0
        at = bisect.bisect_left(marked, first)
        if at < len(marked) and marked[at] <= last:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    scan_call(mod, sub)
    return mod


def _python_files(root: Path, deadline: float) -> Iterator[Path]:
    """The repository's .py files, breadth-first, bounded; virtualenvs and tool folders skipped,
    links not followed."""
    seen = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS and not d.startswith(".") and not (here / d / "pyvenv.cfg").exists()
        )
        for name in sorted(files):
            if not name.endswith(".py") or os.path.islink(here / name):
                continue  # a link is not followed (as repo_walk): one out of the repository is not its code
            seen += 1
            if seen > REPO_MAX_FILES or time.monotonic() > deadline:
                return
            yield here / name


@dataclass
class RepositoryKeys:
    """Keys the repository's own code declares (key -> what declares it), and what bounded the
    walk (``truncated``: why it stopped early, or None)."""

    keys: dict[str, str] = field(default_factory=dict)
    files_parsed: int = 0
    truncated: str | None = None


def repository_keys(root: str | os.PathLike[str]) -> RepositoryKeys:
    """The fields of the repository's dataclasses handed to HfArgumentParser / TrlParser and of
    its GRPOConfig subclasses (and of their repository bases), by class name across files.

    Files that name GRPOConfig or a parser are parsed first; then, round by round, only the
    files that define a class those name (a parsed dataclass, a base) or subclass one found."""
    base = Path(root)
    deadline = time.monotonic() + REPO_MAX_SECONDS
    out = RepositoryKeys()
    mods: list[SourceFacts] = []
    pending: list[tuple[Path, bytes]] = []  # files that may define a class named later
    total = 0
    for path in _python_files(base, deadline):
        data, _ = read_source(path)
        if data is None or not any(w in data for w in _WORTH_PARSING):
            continue
        total += len(data)
        if total > REPO_MAX_BYTES:
            out.truncated = "read as much of the repository's Python as envdoctor reads"
            break
        if any(w in data for w in _NAMES_A_CONFIG):
            _parse_into(mods, base, path, data, out)
        else:
            pending.append((path, data))
    lineage, parsed, classes = _declared(mods)
    for _ in range(MAX_IMPORT_DEPTH + 1):  # classes named but not found: their files
        relevant, stack = set(lineage | parsed), list(lineage | parsed)
        while stack:  # and their bases, as far as they are found
            for cls in classes.get(stack.pop(), []):
                for name in (b.rsplit(".", 1)[-1] for b in cls.bases):
                    if name not in relevant:
                        relevant.add(name)
                        stack.append(name)
        wanted = relevant - set(classes) - {CONFIG_CLASS}
        marks = [b"class " + n.encode() for n in wanted] + [n.encode() for n in lineage | {CONFIG_CLASS}]
        hits = [(p, d) for p, d in pending if any(m in d for m in marks)]
        if not hits or time.monotonic() > deadline:
            break
        pending = [(p, d) for p, d in pending if not any(m in d for m in marks)]
        for path, data in hits:
            _parse_into(mods, base, path, data, out)
        lineage, parsed, classes = _declared(mods)
    if time.monotonic() > deadline:
        out.truncated = f"stopped after {REPO_MAX_SECONDS:.0f} s"
    out.files_parsed = len(mods)
    chosen = _parsed_classes(mods, lineage, classes)
    for kind, group in (("GRPOConfig subclass", lineage), ("dataclass", parsed - lineage)):
        for name in sorted(group):
            for cls in classes.get(name, []) if kind != "dataclass" else chosen.get(name, []):
                for key in _repo_fields(cls, classes, set()):
                    out.keys.setdefault(key, f"a field of {kind} {cls.name} ({cls.path}:{cls.line})")
    return out


def _parsed_classes(
    mods: list[SourceFacts], lineage: set[str], classes: dict[str, list[DataClass]]
) -> dict[str, list[DataClass]]:
    """The definitions a parser that takes a GRPOConfig is handed: the one in its own file, else
    the one in the module it imports the name from, else every class of that name."""
    chosen: dict[str, list[DataClass]] = {}
    for mod in mods:
        for refs in mod.parsed:
            names = [ref.rsplit(".", 1)[-1] for ref in refs]
            if not set(names) & (lineage | {CONFIG_CLASS}):
                continue
            for name in names:
                defs = classes.get(name, [])
                if name in mod.classes:
                    defs = [mod.classes[name]]
                elif name in mod.imports:
                    source = mod.imports[name][0].replace(".", "/")
                    ends = (f"{source}.py", f"{source}/__init__.py")
                    defs = [c for c in defs if c.path.endswith(ends)] or defs
                chosen.setdefault(name, [])
                chosen[name] += [c for c in defs if c not in chosen[name]]
    return chosen


#: words of a file that may hand dataclasses to a parser or subclass GRPOConfig
_NAMES_A_CONFIG = (b"GRPOConfig", b"Parser")


def _parse_into(mods: list[SourceFacts], base: Path, path: Path, data: bytes, out: RepositoryKeys) -> None:
    if len(mods) >= REPO_MAX_PARSED:
        out.truncated = "read as much of the repository's Python as envdoctor reads"
        return
    try:
        label = str(path.relative_to(base))
    except ValueError:
        label = str(path)
    tree, _ = parse_source(data, label)
    if tree is None:
        return
    try:
        mods.append(_scan_light(tree, label, data))
    except (RecursionError, MemoryError):
        return


def _declared(mods: list[SourceFacts]) -> tuple[set[str], set[str], dict[str, list[DataClass]]]:
    """GRPOConfig's subclasses, the classes handed to a parser with a GRPOConfig, every class."""
    classes: dict[str, list[DataClass]] = {}
    for mod in mods:
        for cls in mod.classes.values():
            classes.setdefault(cls.name, []).append(cls)
    lineage = _config_lineage(classes)
    parsed: set[str] = set()
    for refs in (g for mod in mods for g in mod.parsed):  # only a parser that takes a GRPOConfig
        names = {ref.rsplit(".", 1)[-1] for ref in refs}
        if names & (lineage | {CONFIG_CLASS}):
            parsed |= names
    return lineage, parsed, classes


@functools.lru_cache(maxsize=4)
def repository_keys_of(root: str) -> dict[str, str]:
    """``repository_keys(root).keys``, read once a process (the hook checks several configs)."""
    return dict(repository_keys(root).keys)


def _config_lineage(classes: dict[str, list[DataClass]]) -> set[str]:
    """Names of the classes that descend from a class named GRPOConfig (TRL's or a subclass)."""
    lineage: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, defs in classes.items():
            if name in lineage:
                continue
            for cls in defs:
                names = {b.rsplit(".", 1)[-1] for b in cls.bases}
                if CONFIG_CLASS in names or (names - {name}) & lineage:
                    lineage.add(name)
                    changed = True
                    break
    return lineage


def _repo_fields(cls: DataClass, classes: dict[str, list[DataClass]], seen: set[str]) -> Iterable[str]:
    if cls.name in seen or len(seen) > 32:
        return
    seen = seen | {cls.name}
    yield from cls.fields
    for base in cls.bases:
        for parent in classes.get(base.rsplit(".", 1)[-1], []):
            if parent is not cls:
                yield from _repo_fields(parent, classes, seen)
