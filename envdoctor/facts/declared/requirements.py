"""``requirements*.txt`` as pip reads it: comments, continuation lines, ``-r``/``-c`` includes."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from envdoctor.errors import InputError
from envdoctor.facts.declared.interface import Found, in_repository, requirement, resolved, spend, text_of

MAX_DEPTH = 8  # includes nested deeper than this are not followed (and said so)
MAX_FILES = 64
PATTERNS = ("requirements*.txt", "requirements/*.txt", "requirements/*.in", "requirements*.in")
_INCLUDES = ("-r", "--requirement", "-c", "--constraint")
#: options that name where pip looks besides PyPI (pip reads them from any file of the install)
INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")


def uncomment(line: str) -> str:
    """``line`` without its comment, as pip's ``(^|\\s+)#.*$`` removes it: from the first ``#``
    at the start or after whitespace, with the whitespace before it. Linear: the regex
    backtracks over every run of whitespace (100 KB of spaces took 84 s)."""
    at = line.find("#")
    while at > 0 and not line[at - 1].isspace():
        at = line.find("#", at + 1)
    return line if at < 0 else line[:at].rstrip()


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each logical line: ``\\`` joins lines, ``#`` comments go."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = number
        line = uncomment(raw)
        if line.endswith("\\"):
            buf.append(line[:-1] + " ")
            continue
        buf.append(line)
        joined = "".join(buf).strip()
        if joined:
            out.append((start, joined))
        buf = []
    joined = "".join(buf).strip()
    if joined:
        out.append((start, joined))
    return out


#: packages of the stack that publish no development release on PyPI: their ``X.Y.Z.devN`` is a
#: main-branch version (``pip list`` of a git install writes it), which only a git URL installs
NO_DEV_ON_PYPI = frozenset(
    {"trl", "transformers", "vllm", "accelerate", "peft", "deepspeed", "datasets", "liger-kernel", "torch"}
)
_DEV = re.compile(r"\.?dev\d*$")


def not_on_pypi(name: str, pinned: str | None) -> bool:
    """Whether PyPI holds no such release: a local version (``+cu126``: PyTorch's index serves it)
    or a development release of a package that publishes none there (``trl==0.16.0.dev0``)."""
    if not pinned:
        return False
    return "+" in pinned or name in NO_DEV_ON_PYPI and _DEV.search(pinned) is not None


def read(path: Path, shown: str, depth: int = 0, seen: set[Path] | None = None) -> Found:
    """The requirements of one file and of the files it includes (``-r``, ``-c``)."""
    seen = set() if seen is None else seen
    seen.add(resolved(path, shown))
    found = read_lines(logical_lines(text_of(path, shown)), path, shown, depth, seen)
    if depth == 0:  # the file pip is given: its includes' index options are its own
        found.indexed = list(found.files) if found.indexed else []
        found.local_pins = [d for d in found.declarations if not d.locked and not_on_pypi(d.name, d.pinned)]
    return found


def read_lines(
    numbered: list[tuple[int, str]], path: Path, shown: str, depth: int = 0, seen: set[Path] | None = None
) -> Found:
    """Requirement lines (number, text) of ``shown``; includes resolve next to ``path``."""
    seen = set() if seen is None else seen
    found = Found(files=[shown])
    for number, line in numbered:
        spend(shown)
        if line.startswith(("-e ", "--editable ", "--editable=")):
            line = (
                line.split(None, 1)[-1].split("=", 1)[-1]
                if line.startswith("--editable=")
                else line.split(None, 1)[-1]
            )
        if line.startswith("-"):
            found.add(_option(line, path, shown, number, depth, seen))
            continue
        decl = requirement(egg(line.split(" --")[0]), shown, number)
        if decl is not None:
            found.declarations.append(decl)
        elif not _is_reference(line):
            found.notes.append(f"{shown}:{number}: not a requirement, ignored: {line[:60]!r}")
    return found


def egg(line: str) -> str:
    """``git+https://…/trl.git@<sha>#egg=trl`` as the requirement ``trl @ git+https://…@<sha>``."""
    if line.startswith("git+") and "#egg=" in line:
        url, _, frag = line.partition("#")
        name = next((p[4:] for p in frag.split("&") if p.startswith("egg=")), "")
        if name:
            return f"{name} @ {url}"
    return line


def _is_reference(line: str) -> bool:
    return any(mark in line for mark in ("://", "@ ", "./", ".whl", ".tar.gz")) or line == "."


def _option(line: str, path: Path, shown: str, number: int, depth: int, seen: set[Path]) -> Found:
    try:
        words = shlex.split(line)
    except ValueError:
        return Found(notes=[f"{shown}:{number}: unreadable option line, ignored"])
    flag, value = words[0], words[1] if len(words) > 1 else ""
    if "=" in flag and flag.startswith("--"):
        flag, value = flag.split("=", 1)
    elif flag[:2] in ("-r", "-c", "-i", "-f") and len(flag) > 2:
        flag, value = flag[:2], flag[2:]
    if flag in INDEX_OPTIONS:
        return Found(indexed=[shown])  # the whole install looks there too (read() widens it)
    if flag not in _INCLUDES:
        return Found()  # --index-url, -e ., --hash …: nothing to judge
    where = f"{shown}:{number}"
    if not value or "://" in value:
        return Found(notes=[f"{where}: {flag} {value or '(missing)'} not followed"])
    target = resolved(path.parent / value, where)
    if not in_repository(target, path, shown):
        return Found(notes=[f"{where}: {flag} {value} is outside the repository; not read"])
    if target in seen:
        return Found(
            notes=[f"{where}: {flag} {value} includes a file already read (a cycle); not read again"]
        )
    if depth + 1 > MAX_DEPTH or len(seen) >= MAX_FILES:
        return Found(
            notes=[
                f"{where}: {flag} {value} not followed: includes nested more than "
                f"{MAX_DEPTH} deep or more than {MAX_FILES} files"
            ]
        )
    shown_inc = os.path.normpath(Path(shown).parent / value)
    if not target.exists():
        raise InputError(where, f"{flag} {value}: no such file")
    return read(target, shown_inc, depth + 1, seen)  # a FIFO, a device: "not a regular file"
