"""A repository's install script (``setup.sh``, ``install.sh``): its ``pip install`` / ``uv pip
install`` commands, continuation lines joined, read as a Dockerfile's RUN lines are (``-r`` files
of the repository followed, ``-e .[extra]`` read as the package)."""

from __future__ import annotations

import shlex
from pathlib import Path

from envdoctor.facts.declared.dockerfile import _SPLIT, _install_args, _requirements
from envdoctor.facts.declared.interface import Found, LineIndex, spend, text_of

PATTERNS = ("setup.sh", "install.sh", "install_*.sh", "install-*.sh")
MAX_BYTES = 256 * 1024


def read(path: Path, shown: str) -> Found:
    lines = text_of(path, shown, MAX_BYTES).splitlines()
    found = Found(files=[shown])
    installs: list[tuple[int, list[str]]] = []
    i = 0
    while i < len(lines):
        start, parts = i, [lines[i]]
        while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            parts[-1] = parts[-1].rstrip()[:-1]
            i += 1
            parts.append(lines[i])
        i += 1
        for part in _SPLIT.split(" ".join(parts)):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            args = _install_args(words)
            if args is not None:
                spend(shown, len(args))
                installs.append((start + 1, args))
    needles = [x for _, args in installs for w in args for x in (w, w.split("=", 1)[-1])]
    index = LineIndex(lines, needles)
    for start, args in installs:
        found.add(_requirements(args, path, shown, index, start - 1))
    return found
