"""Which model types transformers and which architectures vLLM know, per release
(``rules/knowledge/models.json.gz``, written by scripts/derive_model_support.py from the release
wheels). Read only when a message refuses a model (triage) or a plan holds a model's config.json."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor import versions

SCHEMA = "envdoctor.models/1"
MAX_BYTES = 256_000
PACKAGES = ("transformers", "vllm")
DISPLAY = {"transformers": "transformers", "vllm": "vLLM"}


@dataclass(frozen=True)
class Support:
    """One name (a transformers model type, a vLLM architecture) in a package's releases read."""

    package: str
    name: str
    first: str | None  # the first release read that has it; None: no release read has it
    removed: str | None  # the first release read after its last run (it is gone there), if any
    oldest: str  # the releases read
    newest: str
    plugin: str = ""  # vLLM: the out-of-tree plugin that now holds it

    @property
    def known(self) -> bool:
        return self.first is not None

    def read(self) -> str:
        """``transformers 4.30.0-5.24.0``: the releases envdoctor read."""
        return f"{DISPLAY[self.package]} {self.oldest}-{self.newest}"


@lru_cache(maxsize=1)
def _doc() -> dict[str, Any] | None:
    from envdoctor.knowledge.gzip_json import load
    from envdoctor.resources import rules_dir

    return load(rules_dir() / "knowledge" / "models.json.gz", SCHEMA, MAX_BYTES)


def _table(package: str) -> tuple[list[str], dict[str, str], dict[str, str]] | None:
    doc = _doc()
    part = (doc or {}).get(package)
    if not isinstance(part, dict):
        return None
    releases, names = part.get("releases"), part.get("names")
    if not isinstance(releases, list) or not releases or not isinstance(names, dict):
        return None
    return [str(r) for r in releases], names, dict(part.get("oot") or {})


def _runs(text: str, newest: int) -> list[tuple[int, int]]:
    out = []
    for run in str(text).split(","):
        lo, _, hi = run.partition("-")
        if lo.isdigit():
            out.append((int(lo), int(hi) if hi.isdigit() else newest))
    return out


def lookup(package: str, name: str) -> Support | None:
    """``name`` in ``package``'s releases read; None where envdoctor has no table for it."""
    table = _table(package)
    if table is None:
        return None
    releases, names, oot = table
    newest = len(releases) - 1
    runs = _runs(names.get(name, ""), newest)
    first = releases[runs[0][0]] if runs else None
    end = runs[-1][1] if runs else newest
    removed = releases[end + 1] if runs and end < newest else None
    return Support(package, name, first, removed, releases[0], releases[-1], str(oot.get(name) or ""))


def has(package: str, name: str, version: str | None) -> bool | None:
    """Whether release ``version`` of ``package`` has ``name``: None where it cannot be told (no
    table, no version, a release outside those read)."""
    table = _table(package)
    v = versions.parse(version)
    if table is None or v is None:
        return None
    releases, names, _ = table
    parsed = [versions.parse(r) for r in releases]
    public = versions.parse(v.public)
    if public is None or parsed[0] is None or parsed[-1] is None:
        return None
    if public < parsed[0] or public > parsed[-1]:
        return None
    # the newest release read at or below ``version`` (a patch between two read ones: the older)
    idx = max(i for i, p in enumerate(parsed) if p is not None and p <= public)
    runs = _runs(names.get(name, ""), len(releases) - 1)
    below = any(lo <= idx <= hi for lo, hi in runs)
    if (
        parsed[idx] != public
        and idx + 1 < len(releases)
        and below != any(lo <= idx + 1 <= hi for lo, hi in runs)
    ):
        # a release not read (4.57.0 between 4.56.2 and 4.57.1, a dev build) where the name comes
        # or goes between its read neighbours: either may hold for it
        return None
    return below


def releases_with(package: str, name: str) -> list[str]:
    """The releases read that have ``name``, oldest first."""
    table = _table(package)
    if table is None:
        return []
    releases, names, _ = table
    return [
        releases[i] for lo, hi in _runs(names.get(name, ""), len(releases) - 1) for i in range(lo, hi + 1)
    ]
