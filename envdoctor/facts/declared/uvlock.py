"""``uv.lock``: the exact versions uv installs (``[[package]]`` name and version)."""

from __future__ import annotations

from pathlib import Path

from envdoctor.facts.declared.interface import Found, lock_entries

PATTERNS = ("uv.lock",)


def read(path: Path, shown: str) -> Found:
    return lock_entries(path, shown, table="package")
