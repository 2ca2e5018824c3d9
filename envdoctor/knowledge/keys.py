"""Which release of a package has a config key, from a by-release key table of
rules/knowledge (``releases_scanned`` + ``keys: {name: {since, until}}``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.versions import Version


@lru_cache(maxsize=4096)
def _parsed(text: str) -> Version | None:
    v = versions.parse(text)
    return versions.parse(v.public) if v is not None else None


def _public(text: Any) -> Version | None:
    return _parsed(str(text)) if text else None


@lru_cache(maxsize=16)
def _scanned(releases: tuple[str, ...]) -> tuple[Version, ...]:
    return tuple(sorted(v for v in map(_public, releases) if v is not None))


def presence(table: dict[str, Any], key: str, version: str | None) -> str:
    """``"yes"``, ``"no"`` or ``"unknown"``: whether release ``version`` has ``key``.

    Only scanned releases are facts; a release between the last scanned one without the key and
    the first with it (or the other way round) is ``"unknown"``, never a guess.
    """
    entry = (table.get("keys") or {}).get(key)
    have = _public(version)
    scanned = _scanned(tuple(map(str, table.get("releases_scanned") or ())))
    if entry is None or have is None or not scanned:
        return "unknown"
    since, until = _public(entry.get("since")), _public(entry.get("until"))
    if since is None:
        return "unknown"
    if until is not None and have >= until:
        return "no"
    if have < since:
        without = [v for v in scanned if v < since]  # scanned releases that lacked it
        return "no" if without and have <= without[-1] else "unknown"
    if until is None:
        return "yes"
    with_it = [v for v in scanned if v < until]
    return "yes" if with_it and have <= with_it[-1] else "unknown"


def span(table: dict[str, Any], key: str, name: str) -> str:
    """``"transformers 4.53.0 up to (not including) 5.15.0"``-style text for a key."""
    entry = (table.get("keys") or {}).get(key) or {}
    since, until = entry.get("since"), entry.get("until")
    first = (table.get("releases_scanned") or [None])[0]
    if since == first:  # older releases were not scanned
        return f"{name} releases before {until}" if until else f"every {name} release"
    return f"{name} {since} up to (not including) {until}" if until else f"{name} {since} and newer"
