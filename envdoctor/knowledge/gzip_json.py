"""The derived knowledge files (``rules/knowledge/symbols/``, ``rules/knowledge/fixes/``): gzip'd
JSON documents with a schema tag, read whole and bounded in size."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def load(path: Path, schema: str, max_bytes: int) -> dict[str, Any] | None:
    """The document at ``path``, or None where it is absent, larger than ``max_bytes``, not gzip'd
    JSON, or not of ``schema``."""
    try:
        if not path.is_file() or path.stat().st_size > max_bytes:
            return None
        doc = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == schema else None


def names(folder: Path) -> tuple[str, ...]:
    """The packages a folder of ``PKG.json.gz`` documents holds, sorted."""
    try:
        return tuple(sorted(p.name.removesuffix(".json.gz") for p in folder.glob("*.json.gz")))
    except OSError:
        return ()
