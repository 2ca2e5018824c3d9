"""Where a repository gives pip an index besides PyPI outside its requirement files, for the
files and packages that need one: an install line (a README's step, a shell script, a
Dockerfile, a Makefile; ``\\`` continuations joined) with ``--extra-index-url``,
``--index-url``, ``--find-links`` or uv's ``--torch-backend`` that installs the requirement
file (``-r requirements.txt``) or names the package; ``PIP_EXTRA_INDEX_URL`` (and uv's) set
anywhere; ``pyproject.toml``'s uv indexes. A README (read first) whose install step runs the
file with no index before any line gives one is the documented install: it stops, whatever a
script elsewhere does. Read only when a requirement file pins a local
version (``torch==2.5.1+cu121``) with no index option of its own; bounded."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

#: files looked at: the root's and those one folder below (scripts/, docker/)
PATTERNS = ("README*", "readme*", "*.md", "*.sh", "*.bash", "Dockerfile*", "*.dockerfile", "Makefile")
MAX_FILES = 200
MAX_BYTES = 1024 * 1024
MAX_DIRS = 50

_OPTION = re.compile(r"--(?:extra-)?index-url|--find-links|(?<![\w-])-[fi][\s=]*https?://|--torch-backend")
_ENV = re.compile(r"\b(?:PIP|UV)_(?:EXTRA_)?INDEX_URL\s*=|\bPIP_FIND_LINKS\s*=|\bUV_TORCH_BACKEND\s*=")
_UV_INDEX = re.compile(r"^\s*\[\[tool\.uv\.index\]\]|^\s*\[tool\.uv\.sources\]", re.M)


def index_mentioned(root: Path, files: Iterable[str], packages: Iterable[str]) -> str:
    """``file:line`` of the first place the repository gives pip an index for these
    requirement files or packages ("" when none)."""
    names = {Path(f).name for f in files}
    words = re.compile(
        r"(?<![\w.-])(?:" + "|".join(re.escape(p) for p in sorted(set(packages))) + r")(?![\w-])"
    )
    pyproject = root / "pyproject.toml"
    text = _text(pyproject)
    uv = _UV_INDEX.search(text)
    if uv is not None:
        return f"pyproject.toml:{text.count(chr(10), 0, uv.start()) + 1}"
    for path in _files(root):
        readme = path.parent == root and path.name.lower().startswith("readme")
        for number, line in _logical(_text(path)):
            if _ENV.search(line) or (_OPTION.search(line) and (_installs(line, names) or words.search(line))):
                return f"{path.relative_to(root).as_posix()}:{number}"
            if readme and _installs(line, names):
                return ""  # the README's install step runs the file with no index: it stops
    return ""


def _installs(line: str, names: set[str]) -> bool:
    """Whether the line installs one of these requirement files (``-r x/requirements.txt``)."""
    for m in re.finditer(r"(?:^|\s)(?:-r|--requirement)(?:\s+|=)?([^\s;&|]+)", line):
        if Path(m.group(1).strip("'\"")).name in names:
            return True
    return False


def _logical(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 1
    for number, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = number
        if raw.rstrip().endswith("\\"):
            buf.append(raw.rstrip()[:-1])
            continue
        buf.append(raw)
        out.append((start, " ".join(buf)))
        buf = []
    if buf:
        out.append((start, " ".join(buf)))
    return out


def _files(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder in [root, *_dirs(root)]:
        for pattern in PATTERNS:
            found += [p for p in sorted(folder.glob(pattern)) if p not in found]
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]


def _text(path: Path) -> str:
    try:
        if not path.is_file() or path.is_symlink():
            return ""
        with path.open("rb") as handle:
            return handle.read(MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _dirs(root: Path) -> list[Path]:
    try:
        kept = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")]
    except OSError:
        return []
    return sorted(kept)[:MAX_DIRS]
