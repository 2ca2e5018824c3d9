"""The importer index (rules/knowledge/importers.json.gz, derived from the packages' git histories at
their releases by scripts/derive_importer_index.py): per release of each importer package of the
stack, the names it imports from another stack package (``from M import N``) that some release of
that package lacks: at module level (``u``), under a guard (``g``), or inside a function (``l``).
Read on first use only, for a failed ``from M import N``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor.knowledge.gzip_json import load
from envdoctor.resources import rules_dir

SCHEMA = "envdoctor.importers/1"
MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Importer:
    """``package`` imports ``name`` from ``module`` (of ``provider``): unguarded (at module level or
    in a function it runs) in the release indices ``imports``, only under a guard in ``guarded``,
    out of ``releases`` (oldest first)."""

    package: str
    provider: str
    module: str
    name: str
    releases: tuple[str, ...]
    imports: frozenset[int]
    guarded: frozenset[int]

    @property
    def first(self) -> int:
        return min(self.imports)

    @property
    def last(self) -> int:
        return max(self.imports)

    @property
    def stopped(self) -> str | None:
        """The first release after the newest run of unguarded imports, where the package's newest
        releases no longer import the name unguarded; None where the newest still does."""
        return self.releases[self.last + 1] if self.last + 1 < len(self.releases) else None

    def span(self) -> str:
        """``0.16.0 to 0.17.1``: the releases that import it unguarded (its runs)."""
        runs: list[tuple[int, int]] = []
        for i in sorted(self.imports):
            if runs and runs[-1][1] == i - 1:
                runs[-1] = (runs[-1][0], i)
            else:
                runs.append((i, i))
        parts = [self.releases[a] if a == b else f"{self.releases[a]} to {self.releases[b]}" for a, b in runs]
        return ", ".join(parts)

    def has(self, version: str) -> bool | None:
        """The release ``version`` imports it unguarded; None where the index did not read it."""
        if version not in self.releases:
            return None
        return self.releases.index(version) in self.imports


@lru_cache(maxsize=1)
def _doc() -> dict[str, Any]:
    doc = load(rules_dir() / "knowledge" / "importers.json.gz", SCHEMA, MAX_BYTES)
    packages = (doc or {}).get("packages")
    return packages if isinstance(packages, dict) else {}


def _indices(ranges: list[list[int]]) -> set[int]:
    return {i for r0, r1 in ranges for i in range(r0, r1 + 1)}


def importers(provider: str, module: str, name: str, only: str | None = None) -> list[Importer]:
    """The packages (``only``: that one) some release of which imports ``name`` from ``module`` of
    ``provider`` unguarded, sorted by name."""
    out: list[Importer] = []
    for package, p in sorted(_doc().items()):
        if only is not None and package != only:
            continue
        rel = tuple(str(r) for r in p.get("releases") or ())
        u: set[int] = set()
        g: set[int] = set()
        for dist, mod, n, kind, ranges in p.get("imports") or []:
            if dist == provider and mod == module and n == name:
                (g if kind == "g" else u).update(_indices(ranges))
        u = {i for i in u if i < len(rel)}
        if u:
            out.append(Importer(package, provider, module, name, rel, frozenset(u), frozenset(g - u)))
    return out


def indexed(package: str) -> bool:
    """The index read ``package``'s releases."""
    return package in _doc()
