"""One bounded, breadth-first walk of a repository's files by name pattern (the gate's readers
of launch lines and of committed credentials): links are never followed, folders of installed
or built packages are skipped, and it stops at ``max_files`` files and ``max_depth`` levels."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable
from pathlib import Path


def walk(
    root: Path,
    patterns: Iterable[str],
    *,
    max_files: int,
    max_depth: int,
    skip_dirs: Collection[str],
    skip_hidden_dirs: bool,
) -> list[Path]:
    """The files below ``root`` whose name matches one of ``patterns``, nearest levels first."""
    names = tuple(patterns)
    out: list[Path] = []
    queue = [(root, 0)]
    while queue and len(out) < max_files:
        folder, depth = queue.pop(0)
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for e in entries:
            if e.is_symlink():
                continue
            if e.is_file() and any(fnmatch.fnmatch(e.name, p) for p in names):
                out.append(e)
            elif (
                e.is_dir()
                and depth < max_depth
                and e.name not in skip_dirs
                and not (skip_hidden_dirs and e.name.startswith("."))
            ):
                queue.append((e, depth + 1))
    return out[:max_files]


def read_texts(root: Path, files: Iterable[Path], max_bytes: int) -> dict[str, str]:
    """``{relative posix path: text}`` of ``files`` (from ``walk``) no larger than ``max_bytes``;
    a file that cannot be read is left out, undecodable bytes replaced."""
    texts: dict[str, str] = {}
    for path in files:
        try:
            if path.stat().st_size <= max_bytes:
                texts[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return texts
