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


def _counted(v: Version) -> Version:
    """The release a version counts as for ``at_least``: a release candidate (``a``, ``b``,
    ``rc``) of X counts as X; a ``.dev`` build, a post-release and local labels as they are."""
    if v.pre is not None and v.dev is None:
        return Version(v.base_version)
    return Version(v.public)


def at_least(version: str | None, minimum: str) -> bool | None:
    """Whether ``version`` is ``minimum`` or newer; None when ``version`` does not parse.

    The one comparison for feature gates, defaults and fixed-in versions ("TRL >= 0.26 has no
    max_prompt_length default", "fixed in vLLM 0.7.2"). How pre-releases count, decided:

    - a release candidate of X (``0.26.0rc1``, ``a1``, ``b2``) counts as X: it is X's code frozen
      for the release, with X's features and defaults in (the memory knobs counted it so first);
    - a ``.dev`` build of X (``0.16.0.dev0``, ``0.11.1rc2.dev123``) counts as before X: it is the
      main branch on its way to X, where X's features may not have landed yet (TRL 0.16.0.dev0
      from git still had no ``trl vllm-serve``, which 0.16.0 brought:
      tests/conformance/setups/openr1-legacy-vllm-device-zero2);
    - a post-release of X (``0.8.5.post1``) counts as X or later; ``+cu124`` labels are ignored;
    - a ``minimum`` that is itself a pre-release (``0.9.0rc1``) is compared exactly (PEP 440);
    - ``1.10`` and ``1.10.0`` are the same release.

    Specifier ranges of the knowledge are matched by ``satisfies`` (pip's rules), not here.
    """
    v = parse(version)
    if v is None:
        return None
    floor = Version(minimum)
    return (Version(v.public) if floor.is_prerelease else _counted(v)) >= floor


def below(version: str | None, minimum: str) -> bool:
    """True when ``version`` parses and is older than ``minimum``: ``not at_least`` for a
    version that parses (pre-releases count as ``at_least`` says)."""
    return at_least(version, minimum) is False


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
