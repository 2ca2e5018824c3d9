"""Version strings as pip reads them: tolerant parsing and specifier checks."""

from __future__ import annotations

from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


@lru_cache(maxsize=1024)
def parse(text: str | None) -> Version | None:
    """A ``Version`` or None when the string is not PEP 440 (``+cu124`` labels are fine)."""
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


@lru_cache(maxsize=1024)
def spec(text: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def satisfies(version: str | None, specifier: str) -> bool | None:
    """Whether ``version`` is in ``specifier`` (pre-releases count); None if unparseable."""
    v, s = parse(version), spec(specifier)
    if v is None or s is None:
        return None
    return s.contains(v, prereleases=True) or s.contains(Version(v.public), prereleases=True)


def below(version: str | None, minimum: str) -> bool:
    """True when ``version`` parses and is older than ``minimum`` (local labels ignored)."""
    v = parse(version)
    return v is not None and Version(v.public) < Version(minimum)


def at_least(version: str | None, minimum: str) -> bool:
    v = parse(version)
    return v is not None and Version(v.public) >= Version(minimum)


def cuda_of_torch(version: str | None) -> str | None:
    """The CUDA version a torch build targets, from its local label (``+cu124`` → ``12.4``)."""
    v = parse(version)
    if v is None or not v.local or not v.local.startswith("cu"):
        return None
    digits = v.local[2:]
    if not digits.isdigit() or len(digits) < 3:
        return None
    return f"{digits[:-1]}.{digits[-1]}"


_ZERO = Version("0")


def sort_key(text: str | None) -> Version:
    """``parse(text)`` for ``max``/``sorted``: what is not a version orders first, as 0."""
    return parse(text) or _ZERO
