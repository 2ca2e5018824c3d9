"""Specifier sets as ranges: do two meet, where does one start, what releases does it span."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.versions import spec as _set  # parsed once per text (cached)


def _candidates(*specs: SpecifierSet) -> list[Version]:
    """Versions at and just above every bound: if the sets share a version, one of these is."""
    out = [Version("0")]
    for s in specs:
        for item in s:
            base = item.version.rstrip(".*").rstrip(".")
            for text in (base, base + ".1", base + ".0.1", base + ".post1"):
                try:
                    out.append(Version(text))
                except InvalidVersion:
                    pass
    return sorted(set(out))


def meet(*specs: str) -> Version | None:
    """The lowest version every specifier allows (None when they exclude each other)."""
    sets = [s for s in map(_set, specs) if s is not None]
    for v in _candidates(*sets):
        if all(s.contains(v, prereleases=True) for s in sets):
            return v
    return None


def within(spec: str, low: str | None, high: str | None) -> bool:
    """Whether ``spec`` allows some version in ``[low, high)`` (open ends for None)."""
    bounds = ",".join(b for b in ((f">={low}" if low else ""), (f"<{high}" if high else "")) if b)
    return meet(spec, bounds) is not None if bounds else meet(spec) is not None


def upper_open(spec: str) -> bool:
    """True when ``spec`` has no upper bound (a new release is allowed as it comes out)."""
    s = _set(spec)
    return s is None or not any(i.operator in ("<", "<=", "==", "===", "~=") for i in s)


def known_in(spec: str, known: list[str]) -> list[str]:
    """The releases of ``known`` that ``spec`` allows, oldest first."""
    s = _set(spec)
    if s is None:
        return []
    return sorted((k for k in known if s.contains(k, prereleases=True)), key=Version)
