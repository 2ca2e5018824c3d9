"""A repository's install script (``setup.sh``, ``install.sh``): its ``pip install`` / ``uv pip
install`` commands, continuation lines joined, read as a Dockerfile's RUN lines are (``-r`` files
of the repository followed, ``-e .[extra]`` read as the package)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from envdoctor.facts.declared.dockerfile import installed_by
from envdoctor.facts.declared.interface import Found, text_of

PATTERNS = ("setup.sh", "install.sh", "install_*.sh", "install-*.sh")
MAX_BYTES = 256 * 1024


def _commands(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(first line, command) of each command, ``\\`` continuation lines joined."""
    i = 0
    while i < len(lines):
        start, parts = i, [lines[i]]
        while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            parts[-1] = parts[-1].rstrip()[:-1]
            i += 1
            parts.append(lines[i])
        i += 1
        yield start + 1, " ".join(parts)


def read(path: Path, shown: str) -> Found:
    lines = text_of(path, shown, MAX_BYTES).splitlines()
    found = Found(files=[shown])
    found.add(installed_by(_commands(lines), lines, path, shown))
    return found
