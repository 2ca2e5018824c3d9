"""The derived knowledge files (``rules/knowledge/symbols/``, ``rules/knowledge/fixes/``): gzip'd
JSON documents with a schema tag, read whole and bounded in size; and the release runs they write
(``"3-9,12"``: indices into the document's releases)."""

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


def mask(spec: object) -> int:
    """``"3-9,12"`` (indices into a document's releases) as a bit mask; a part that is not one is
    passed over."""
    out = 0
    for part in str(spec).split(","):
        lo, _, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            continue
        out |= ((1 << (b - a + 1)) - 1) << a
    return out
