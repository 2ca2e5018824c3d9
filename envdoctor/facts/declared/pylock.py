"""``pylock.toml`` (PEP 751): the exact versions of ``[[packages]]``."""

from __future__ import annotations

from pathlib import Path

from envdoctor.facts.declared.interface import Found, lock_entries

PATTERNS = ("pylock.toml", "pylock.*.toml")


def read(path: Path, shown: str) -> Found:
    return lock_entries(path, shown, table="packages")
