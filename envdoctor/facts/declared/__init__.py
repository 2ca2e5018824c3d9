"""The training stack a repository declares, read from its files (never executed).

One reader module per format (``interface.py`` states the contract); ``READERS`` is the only
wiring. ``discover`` finds the files at a repository's root, ``read_stack`` reads them.
"""

from __future__ import annotations

import fnmatch
import importlib
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from envdoctor.facts.declared.interface import Declaration, Found, budget

#: format → reader module (each has PATTERNS and read(path, shown)); imported on first use, so
#: the rules (checks/declared.py imports ``ranges`` and ``resolve``) do not load the readers
READERS = {
    "uv.lock": "uvlock",
    "pylock.toml": "pylock",
    "poetry.lock": "poetrylock",
    "pyproject.toml": "pyproject",
    "requirements": "requirements",
    "conda": "conda",
    "dockerfile": "dockerfile",
}
SEEN_NOT_READ = ("setup.py",)

__all__ = ["READERS", "Declaration", "Found", "discover", "is_declaration", "read_stack", "reader_for"]


@lru_cache(maxsize=1)
def _modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(f"{__name__}.{m}") for m in READERS.values())


def _reader(path: str) -> ModuleType | None:
    p = Path(path)
    tail = f"{p.parent.name}/{p.name}"
    for reader in _modules():
        if any(fnmatch.fnmatch(tail if "/" in pat else p.name, pat) for pat in reader.PATTERNS):
            return reader
    return None


def reader_for(path: str) -> ModuleType:
    """The reader of a file (``requirements`` for anything unrecognised: ``-r`` style)."""
    return _reader(path) or importlib.import_module(f"{__name__}.requirements")


def is_declaration(path: str) -> bool:
    """Whether a file is one the readers know (``requirements-gpu.txt``, ``uv.lock``…)."""
    return _reader(path) is not None


def discover(root: Path) -> list[Path]:
    """The declaration files at ``root`` (and ``requirements/``), in a stable order."""
    found: list[Path] = []
    for reader in _modules():
        for pattern in reader.PATTERNS:
            for path in sorted(root.glob(pattern)):
                if path.is_file() and path not in found:
                    found.append(path)
    return found


def read_stack(paths: list[Path], root: Path) -> Found:
    """Every declaration of these files; includes reached from one file are not read again as
    files of their own. ``setup.py`` at the root is seen and said so, never run."""
    from envdoctor.redact import clean  # notes show file text: secrets masked, controls escaped

    stack = Found()
    with budget():  # caps on the files, bytes and requirements of all the files together
        for path in paths:
            shown = _shown(path, root)
            if shown in stack.files:
                continue  # already read as an include
            stack.add(reader_for(str(path)).read(path, shown))
    stack.notes = [clean(n, limit=300) for n in stack.notes]
    for name in SEEN_NOT_READ:
        if (root / name).is_file():
            stack.notes.append(
                f"{name}: seen, not read (it is code; envdoctor never runs it — "
                "declare the pins in pyproject.toml or a requirements file, or "
                "pass --requirements / --assume)"
            )
    return stack


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except (ValueError, RuntimeError, OSError):  # outside the root, a symlink loop
        return str(path)
