"""``pip install`` / ``uv pip install`` in a Dockerfile's RUN instructions (continuation lines
joined); ``-r FILE`` is followed when FILE is in the repository next to the Dockerfile."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from envdoctor.facts.declared import requirements
from envdoctor.facts.declared.interface import (
    Found,
    LineIndex,
    in_repository,
    requirement,
    resolved,
    spend,
    text_of,
)

PATTERNS = ("Dockerfile", "Dockerfile.*", "*.Dockerfile", "Containerfile")
#: pip / uv options whose value is the next word
_WITH_VALUE = {
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--trusted-host",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--python",
    "-p",
    "--platform",
    "--python-version",
    "--only-binary",
    "--no-binary",
    "-C",
    "--config-settings",
    "--cache-dir",
    "--src",
    "--upgrade-strategy",
    "--implementation",
    "--abi",
    "--progress-bar",
    "--index",
    "--default-index",
    "--index-strategy",
    "-e",
    "--editable",
    "--log",
    "--timeout",
    "--retries",
}
_INCLUDE = {"-r", "--requirement", "-c", "--constraint"}
_SPLIT = re.compile(r"&&|\|\||;|\|")
#: a Dockerfile is read up to this size: its words are split by ``shlex`` (pure Python, about
#: 0.7 s per MiB); a real one is a few KB
MAX_BYTES = 1024 * 1024


def run_instructions(text: str | list[str]) -> list[tuple[int, str]]:
    """(line number, command) of each RUN instruction, continuation lines joined."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines() if isinstance(text, str) else text
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\s*RUN\s", line, re.I):
            start, parts = i + 1, [line.strip()[3:]]
            while i + 1 < len(lines) and parts[-1].rstrip().endswith("\\"):
                parts[-1] = parts[-1].rstrip()[:-1]
                i += 1
                while i + 1 < len(lines) and (lines[i].lstrip().startswith("#") or not lines[i].strip()):
                    i += 1  # Docker drops comment and empty lines inside an instruction
                parts.append(lines[i].strip())
            out.append((start, " ".join(parts)))
        i += 1
    return out


def read(path: Path, shown: str) -> Found:
    lines = text_of(path, shown, MAX_BYTES).splitlines()
    found = Found(files=[shown])
    found.add(installed_by(run_instructions(lines), lines, path, shown))
    return found


def installed_by(commands: Iterable[tuple[int, str]], lines: list[str], path: Path, shown: str) -> Found:
    """What the ``pip install`` / ``uv pip install`` commands among ``commands`` ((first line,
    command text) pairs of the file ``lines`` came from) install: requirements, ``-r`` files of the
    repository followed, ``-e .[extra]`` read as the package."""
    found = Found()
    installs: list[tuple[int, list[str]]] = []
    for start, command in commands:
        for part in _SPLIT.split(command):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            args = _install_args(words)
            if args is not None:
                spend(shown, len(args))
                installs.append((start, args))
    needles = [x for _, args in installs for w in args for x in (w, w.split("=", 1)[-1])]
    index = LineIndex(lines, needles)  # one pass for every word's line
    for start, args in installs:
        found.add(_requirements(args, path, shown, index, start - 1))
    return found


def _install_args(words: list[str]) -> list[str] | None:
    """The words after ``pip install`` (pip, pip3, python -m pip, uv pip), else None."""
    for i in range(len(words) - 1):
        tool = words[i].rsplit("/", 1)[-1]
        if words[i + 1] == "install" and (
            re.fullmatch(r"pip[0-9.]*", tool) or (tool == "pip" and i > 0 and words[i - 1] in ("-m", "uv"))
        ):
            return words[i + 2 :]
    return None


def _requirements(args: list[str], path: Path, shown: str, index: LineIndex, start: int) -> Found:
    found = Found()
    skip = False
    for j, word in enumerate(args):
        if skip:
            skip = False
            continue
        flag = word.split("=", 1)[0]
        if flag in ("-e", "--editable") or _local(word):
            value = (
                word
                if _local(word)
                else (word.split("=", 1)[1] if "=" in word else (args[j + 1] if j + 1 < len(args) else ""))
            )
            skip = not _local(word) and "=" not in word
            found.add(_package(value, path, shown, index.find(value, start)))
            continue
        if flag in _INCLUDE:
            value = word.split("=", 1)[1] if "=" in word else (args[j + 1] if j + 1 < len(args) else "")
            skip = "=" not in word
            found.add(_include(flag, value, path, shown, index.find(value, start)))
            continue
        if word.startswith("-"):
            skip = flag in _WITH_VALUE and "=" not in word
            continue
        if "$" in word:
            found.notes.append(f"{shown}:{index.find(word, start)}: {word} uses a build variable; not judged")
            continue
        decl = requirement(word, shown, index.find(word, start))
        if decl is not None:
            found.declarations.append(decl)
    return found


def _local(word: str) -> bool:
    """``.``, ``.[dev]``, ``./pkg``, ``/app[extra]``: a folder of the image, not a requirement."""
    return word.split("[", 1)[0] in (".", "..") or word.startswith(("./", "../", "/"))


def _package(value: str, path: Path, shown: str, line: int) -> Found:
    """``pip install -e ".[dev]"``: the package in that folder of the repository (its setup.py,
    setup.cfg, pyproject.toml; every extra is read, as at the root)."""
    from envdoctor.facts.declared import reader_for

    folder = value.split("[", 1)[0]
    if "://" in value or value.startswith("git+"):
        return Found()
    target = resolved(path.parent / folder.lstrip("/"), f"{shown}:{line}")
    if not (in_repository(target, path, shown) and target.is_dir()):
        if target.is_dir() or not folder.startswith("/"):
            return Found(
                notes=[f"{shown}:{line}: pip install {value}: not a folder of this repository; not read"]
            )
        target = resolved(path.parent, shown)  # COPY . /app; pip install -e /app: the build context
    rel = folder if not folder.startswith("/") and target != resolved(path.parent, shown) else "."
    found = Found()
    for name in ("pyproject.toml", "setup.cfg", "setup.py"):
        file = target / name
        if file.is_file():
            found.add(reader_for(str(file)).read(file, os.path.normpath(Path(shown).parent / rel / name)))
    return found


def _include(flag: str, value: str, path: Path, shown: str, line: int) -> Found:
    target = resolved(path.parent / value.lstrip("/"), f"{shown}:{line}")
    inside = in_repository(target, path, shown)
    if value and inside and target.is_file():
        return requirements.read(target, os.path.normpath(Path(shown).parent / value.lstrip("/")))
    return Found(
        notes=[
            f"{shown}:{line}: {flag} {value} is not a file of this repository next "
            f"to {Path(shown).name}; not read"
        ]
    )
