"""Proved package versions written where the repository declares them (``envdoctor hook --fix``).

A pin is rewritten in place, as text, on the line the declared-stack reader found it on:

- ``requirements*.txt``: the requirement's version specifier only; its extras, marker, comment
  and options stay. A hashed requirement (``--hash``) is refused: the hashes pin the old wheel.
- ``pyproject.toml``: the quoted dependency string of ``[project] dependencies`` /
  ``optional-dependencies`` (and the other lists the reader reads); nothing else of the file moves.
- ``setup.py``: a requirement string that is a plain literal in a list or tuple (``install_requires
  = ["trl==0.17.0", …]``, open-r1's ``_deps`` table); a string built another way (an f-string,
  concatenation, read from a file) is said to be not machine-editable.

Lock files, Dockerfiles, conda environments and direct references (``trl @ git+…``) are never
written: the edit says why. Nothing here writes a file: ``pin_edits`` returns the new texts.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from envdoctor.facts.interface import normalize_name

if TYPE_CHECKING:
    from envdoctor.facts.declared.interface import Declaration

#: a version specifier clause (``>=0.17``, ``== 0.18.0``, ``<2``), optionally several with commas
_CLAUSE = r"(?:===|==|~=|!=|>=|<=|>|<)\s*[A-Za-z0-9.*+!_-]+"
_SPEC = rf"(?:\(\s*)?(?:{_CLAUSE}(?:\s*,\s*{_CLAUSE})*)?(?:\s*\))?"
_QUOTED = re.compile(r"""(?P<q>["'])(?P<body>[^"'\\\n]*)(?P=q)""")
#: the files each kind of reader reads, and how a pin there is edited
_LOCKS = ("uv.lock", "poetry.lock", "pylock.toml")


@dataclass
class PinEdits:
    """What ``pin_edits`` would change: ``texts`` (file -> (old, new)), ``done`` (file ->
    ``name==version`` written there), ``refused`` (``name``, ``where``, why not written)."""

    texts: dict[str, tuple[str, str]] = field(default_factory=dict)
    done: dict[str, list[str]] = field(default_factory=dict)
    refused: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        return [f for f, (old, new) in self.texts.items() if old != new]


def _name_pattern(name: str) -> str:
    """A package name as written: case and ``-`` / ``_`` / ``.`` free (PEP 503)."""
    parts = re.split(r"[-_.]+", normalize_name(name))
    return r"[-_.]+".join(re.escape(p) for p in parts)


def _requirement_re(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?i)(?<![A-Za-z0-9._-])(?P<name>{_name_pattern(name)})(?P<extras>\s*\[[^\]\n]*\])?"
        rf"(?P<gap>\s*)(?P<spec>{_SPEC})(?![A-Za-z0-9._-])"
    )


def rewrite(text: str, name: str, version: str) -> str | None:
    """``text`` (one requirement, or the part of a line that holds it) with ``name``'s version
    specifier replaced by ``==version``; extras, marker and what follows stay. None when the
    requirement is not found in it, or is a direct reference (``name @ url``)."""
    m = _requirement_re(name).search(text)
    if m is None or text[m.end() :].lstrip().startswith("@"):
        return None
    return f"{text[: m.start('gap')]}=={version}{text[m.end('spec') :]}"


def _requirements_line(lines: list[str], decl: Declaration, version: str) -> str | None | Exception:
    """The new text of the requirements file's line (None: not found there), or a refusal."""
    from envdoctor.facts.declared.requirements import logical_lines, uncomment

    logical = dict(logical_lines("\n".join(lines)))
    if "--hash" in logical.get(decl.line, ""):
        return ValueError(
            "the requirement is hashed (--hash): a new version needs new hashes; regenerate the "
            "file (pip-compile --generate-hashes)"
        )
    raw = lines[decl.line - 1]
    body = uncomment(raw)
    new = rewrite(body, decl.name, version)
    return None if new is None else new + raw[len(body) :]


def _quoted_line(line: str, decl: Declaration, version: str) -> str | None:
    """``line`` with the quoted requirement string of ``decl`` rewritten (None: none there)."""
    from envdoctor.facts.packages import parse_requirement

    for m in _QUOTED.finditer(line):
        req = parse_requirement(m.group("body").strip())
        if req is None or normalize_name(req.name) != decl.name or req.url:
            continue
        new = rewrite(m.group("body"), decl.name, version)
        if new is not None:
            return line[: m.start("body")] + new + line[m.end("body") :]
    return None


def _setup_literal_ok(text: str, decl: Declaration) -> str | None:
    """Why the requirement string of ``decl`` in a setup.py is not machine-editable (None: it is
    a plain one-line string literal, an item of a list or tuple)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "setup.py is not valid Python"
    from envdoctor.facts.packages import parse_requirement

    for node in ast.walk(tree):
        if not isinstance(node, (ast.List, ast.Tuple)):
            continue
        for elt in node.elts:
            if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
                continue
            req = parse_requirement(elt.value.strip())
            if req is None or normalize_name(req.name) != decl.name or elt.lineno != decl.line:
                continue
            source = ast.get_source_segment(text, elt) or ""
            if elt.end_lineno != elt.lineno or not _QUOTED.fullmatch(source):
                return "the requirement string is not one plain literal (joined, prefixed, multi-line)"
            return None
    return (
        f"{decl.name} is not a plain string literal in a list there (built by code, an f-string, "
        "read from a file)"
    )


def _kind(file: str) -> str:
    name = Path(file).name
    if name == "pyproject.toml":
        return "pyproject"
    if name == "setup.py":
        return "setup.py"
    if name in _LOCKS:
        return "lock"
    from envdoctor.facts.declared import reader_for

    reader = reader_for(file).__name__.rsplit(".", 1)[-1]
    return "requirements" if reader == "requirements" else reader


_NOT_EDITED = {
    "lock": "a lock file: re-lock it (uv lock --upgrade-package NAME, poetry lock) after the pin changes",
    "dockerfile": "a Dockerfile's install line: change it by hand",
    "conda": "a conda environment file: change it by hand",
    "setupcfg": "setup.cfg: change it by hand",
    "shell": "an install script: change it by hand",
    "uvlock": "a lock file: re-lock it",
}


def pin_edits(root: Path, declared: dict[str, list[Declaration]], packages: dict[str, str]) -> PinEdits:
    """The edits that pin each of ``packages`` (name -> version) where ``declared`` (name -> its
    declarations, the declared stack's) says it. A package the repository does not declare is
    refused (nothing to rewrite); so is each declaration that cannot be edited, with why."""
    out = PinEdits()
    lines_of: dict[str, list[str]] = {}
    olds: dict[str, str] = {}
    for raw_name, version in sorted(packages.items()):
        name = normalize_name(raw_name)
        decls = [d for d in declared.get(name, []) if not d.via]
        if not decls:
            out.refused.append((name, "", f"not declared in the repository; {name}=={version} not written"))
            continue
        for decl in decls:
            why = _edit_one(root, decl, version, lines_of, olds)
            if why is not None:
                out.refused.append((name, decl.where, why))
            else:
                out.done.setdefault(decl.file, []).append(f"{name}=={version}")
    for file, lines in lines_of.items():
        out.texts[file] = (olds[file], "\n".join(lines))
    return out


def _edit_one(
    root: Path, decl: Declaration, version: str, lines_of: dict[str, list[str]], olds: dict[str, str]
) -> str | None:
    """Edit ``decl`` in ``lines_of[decl.file]`` (read on first use); None when done, else why not."""
    if decl.url:
        return "a direct reference (name @ git+…): pin a release there by hand"
    if decl.locked:
        return _NOT_EDITED["lock"]
    kind = _kind(decl.file)
    if kind not in ("requirements", "pyproject", "setup.py"):
        return _NOT_EDITED.get(kind, "not a file envdoctor edits: change it by hand")
    path = root / decl.file
    if Path(decl.file).is_absolute() or not path.resolve().is_relative_to(root.resolve()):
        return "outside the repository: not written"
    if decl.file not in lines_of:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return f"cannot read it ({type(exc).__name__})"
        lines_of[decl.file], olds[decl.file] = text.split("\n"), text
    lines = lines_of[decl.file]
    if not 0 < decl.line <= len(lines):
        return "its line is not in the file"
    if kind == "setup.py":
        why = _setup_literal_ok("\n".join(lines), decl)
        if why is not None:
            return f"not machine-editable: {why}"
    if kind == "requirements":
        new: str | None | Exception = _requirements_line(lines, decl, version)
    else:
        new = _quoted_line(lines[decl.line - 1], decl, version)
    if isinstance(new, Exception):
        return str(new)
    if new is None:
        return "the requirement is not written on one line there (not machine-editable)"
    lines[decl.line - 1] = new
    return None
