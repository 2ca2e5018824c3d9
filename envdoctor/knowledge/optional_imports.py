"""The optional-import index (rules/knowledge/optional_imports.json.gz, derived from the packages'
git histories at their releases by scripts/derive_optional_imports.py): per package, the
module-level names it imports only when another package is available (``if is_peft_available():
from peft import LoraConfig``, ``try: … except ImportError``), with the guard and the releases, and
the requirements its releases declare (extras and base requirements). Read on first use only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.knowledge.gzip_json import load
from envdoctor.resources import rules_dir

SCHEMA = "envdoctor.optional_imports/1"
MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Guarded:
    """A name ``package``'s ``module`` imports from ``provider`` only under ``guard``, in
    ``releases`` (the package's releases whose code has it)."""

    package: str
    module: str
    name: str
    provider: str
    guard: str
    releases: tuple[str, ...]


@lru_cache(maxsize=1)
def _doc() -> dict[str, Any]:
    doc = load(rules_dir() / "knowledge" / "optional_imports.json.gz", SCHEMA, MAX_BYTES)
    packages = (doc or {}).get("packages")
    return packages if isinstance(packages, dict) else {}


def _releases(all_releases: list[str], ranges: list[list[int]]) -> tuple[str, ...]:
    return tuple(
        all_releases[i] for r0, r1 in ranges for i in range(r0, r1 + 1) if 0 <= i < len(all_releases)
    )


def packages() -> tuple[str, ...]:
    return tuple(sorted(_doc()))


def guarded(package: str, module: str, name: str) -> list[Guarded]:
    """The rows of ``package`` for ``name`` imported under a guard in ``module`` (its path inside
    the package: ``trainer/utils.py``)."""
    p = _doc().get(package) or {}
    rel = list(p.get("releases") or [])
    return [
        Guarded(package, m, n, str(provider), str(guard), _releases(rel, ranges))
        for m, n, provider, guard, ranges in p.get("imports") or []
        if m == module and n == name
    ]


def requirement(package: str, dist: str, release: str | None) -> tuple[str, str] | None:
    """The requirement ``package`` declares for ``dist`` at ``release`` (the newest release read
    where not given or not read): (requirement, extra; "" for a base requirement), or None."""
    p = _doc().get(package) or {}
    rel = list(p.get("releases") or [])
    if not rel:
        return None
    at = release if release in rel else None
    if at is None and release is not None:
        older = [r for r in rel if versions.at_least(release, r)]
        at = older[-1] if older else rel[0]
    at = at or rel[-1]
    rows = [
        (str(req), str(extra))
        for d, req, extra, ranges in p.get("requires") or []
        if d == dist and at in _releases(rel, ranges)
    ]
    if not rows:
        return None
    # the extra named after the distribution, then a base requirement, then any extra
    rows.sort(key=lambda r: (r[1] != dist, r[1] != "", r[1] in ("dev", "test", "tests"), r[1]))
    return rows[0]


def base_specifier(package: str, dist: str, release: str | None) -> str | None:
    """The specifiers of the base requirements (no extra, no marker) ``package``'s ``release``
    declares for ``dist``, joined (``>=4.50.0``); None where it declares none or the index did not
    read that release."""
    p = _doc().get(package) or {}
    rel = list(p.get("releases") or [])
    if release not in rel:
        return None
    specs = [
        str(req)[len(dist) :].strip()
        for d, req, extra, ranges in p.get("requires") or []
        if d == dist and extra == "" and ";" not in str(req) and release in _releases(rel, ranges)
    ]
    return ",".join(s for s in specs if s) or None


def base_requirement(package: str, dist: str) -> bool:
    """``dist`` is among ``package``'s base requirements in any release read (always installed with
    it: a guard on it tests a feature or a version, not whether it is there)."""
    p = _doc().get(package) or {}
    return any(d == dist and extra == "" for d, _, extra, _ in p.get("requires") or [])


def releases_of(package: str) -> tuple[str, ...]:
    """The releases of ``package`` the index read, oldest first."""
    return tuple((_doc().get(package) or {}).get("releases") or ())
