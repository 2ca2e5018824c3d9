"""The fields of a package's configuration classes in the releases before its symbol history
(rules/knowledge/config_fields/, derived from the package's git history by
scripts/derive_config_fields.py): per class, the releases that have it, its base classes and the
keywords its constructor takes (an ``__init__``'s parameters, or a dataclass's fields; ``**`` for
``**kwargs``).

Triage reads it for ``X.__init__() got an unexpected keyword argument 'k'`` where the symbol history
(rules/knowledge/symbols/) starts after class ``X`` was born: whether an older release took ``k``
(the field was removed before the history: drift), whether ``k`` came with an older release (the
installed release predates it), or whether no release ever did (the caller passes another class's
field). Read lazily, in triage only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor.knowledge.gzip_json import load, mask

SCHEMA = "envdoctor.config_fields/1"
MAX_BYTES = 256 * 1024
MAX_DEPTH = 8  # base classes followed


@dataclass(frozen=True)
class Fields:
    """One package's older configuration classes."""

    package: str
    releases: tuple[str, ...]  # oldest first; all older than ``until``
    until: str  # the symbol history's first release
    from_first: bool  # the oldest release read is the package's first: a class's birth is read
    classes: dict[str, Any]

    def present(self, cls: str) -> int:
        """The releases (a bit mask of indices into ``releases``) that have class ``cls``."""
        spec = self.classes.get(cls)
        return mask(spec.get("r", "")) if isinstance(spec, dict) else 0

    def takes(self, cls: str, keyword: str, depth: int = 0) -> tuple[int, frozenset[str]]:
        """``(releases where cls(...) takes keyword — by name, through **kwargs, or as a field of a
        base of this index —, the bases of other packages it has, whose releases this index does not
        read)``."""
        spec = self.classes.get(cls)
        if not isinstance(spec, dict):
            return 0, frozenset()
        fields = spec.get("f", {}) if isinstance(spec.get("f"), dict) else {}
        have = mask(fields.get(keyword, "")) | mask(fields.get("**", ""))
        outside: set[str] = set()
        bases = spec.get("b", {}) if isinstance(spec.get("b"), dict) else {}
        for base, runs in bases.items():
            if base == cls:
                continue
            if base in self.classes and depth < MAX_DEPTH:
                inherited, more = self.takes(base, keyword, depth + 1)
                have |= inherited & mask(runs)
                outside |= more
            else:
                outside.add(base)
        return have & self.present(cls), frozenset(outside)

    def born(self, cls: str) -> str:
        """The first release read that has ``cls``, where the index reads its birth (a release
        before it lacks it, or the oldest read is the package's first); "" otherwise."""
        have = self.present(cls)
        if not have:
            return ""
        first = (have & -have).bit_length() - 1
        return self.releases[first] if first > 0 or self.from_first else ""

    def span(self, have: int) -> tuple[str, str]:
        """The first and last release of a mask."""
        if not have:
            return "", ""
        return self.releases[(have & -have).bit_length() - 1], self.releases[have.bit_length() - 1]


@lru_cache(maxsize=32)
def config_fields(package: str) -> Fields | None:
    """The older configuration classes of ``package`` (a distribution name), or None where envdoctor
    has none."""
    from envdoctor.resources import rules_dir

    doc = load(rules_dir() / "knowledge" / "config_fields" / f"{package}.json.gz", SCHEMA, MAX_BYTES)
    if doc is None or not isinstance(doc.get("classes"), dict):
        return None
    return Fields(
        str(doc.get("package") or package),
        tuple(str(r) for r in doc.get("releases") or []),
        str(doc.get("until") or ""),
        bool(doc.get("from_first")),
        doc["classes"],
    )
