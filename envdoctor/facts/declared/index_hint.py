"""Where a repository tells pip about an index besides PyPI outside its requirement files: a
README's install step, a shell script, a Dockerfile, a Makefile, ``pyproject.toml``'s uv
indexes (``--extra-index-url``, ``--find-links``, ``PIP_EXTRA_INDEX_URL``, uv's
``--torch-backend``, PyTorch's own index). Read only when a requirement file pins a local
version (``torch==2.5.1+cu121``) and has no index option of its own; bounded."""

from __future__ import annotations

import re
from pathlib import Path

#: files looked at: the root's and one folder below (scripts/, docker/)
PATTERNS = (
    "README*",
    "readme*",
    "*.md",
    "*.sh",
    "*.bash",
    "Dockerfile*",
    "*.dockerfile",
    "Makefile",
    "pyproject.toml",
)
MAX_FILES = 200
MAX_BYTES = 1024 * 1024

_INDEX = re.compile(
    r"--(?:extra-)?index-url|--find-links|(?<![\w-])-[fi]\s*https?://|\b(?:PIP|UV)_(?:EXTRA_)?INDEX_URL\b"
    r"|--torch-backend|\bUV_TORCH_BACKEND\b|pytorch\.org/(?:whl|get-started)|\[\[tool\.uv\.index\]\]"
)


def index_mentioned(root: Path) -> str:
    """``file:line`` of the first index option the repository writes outside its requirement
    files ("" when none)."""
    files: list[Path] = []
    for folder in [root, *sorted(p for p in _dirs(root))]:
        for pattern in PATTERNS:
            files += [p for p in sorted(folder.glob(pattern)) if p not in files]
        if len(files) >= MAX_FILES:
            break
    for path in files[:MAX_FILES]:
        try:
            if not path.is_file() or path.is_symlink():
                continue
            with path.open("rb") as handle:
                text = handle.read(MAX_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        match = _INDEX.search(text)
        if match:
            line = text.count("\n", 0, match.start()) + 1
            return f"{path.relative_to(root).as_posix()}:{line}"
    return ""


def _dirs(root: Path) -> list[Path]:
    try:
        return [
            p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")
        ][:50]
    except OSError:
        return []
