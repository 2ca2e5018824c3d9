"""Version strings as pip reads them: tolerant parsing and specifier checks, without packaging.

Importing ``packaging.version`` and ``packaging.specifiers`` cost a static check ~10 ms (their
patterns alone ~6 ms). A version of the canonical shapes (``2.6.0+cu124``, ``1.0rc1``,
``0.8.5.post1``, ``0.16.0.dev0``) is parsed by one small pattern here; any other spelling
(``v1.0``, ``1.0-1``, ``1.0.0-RC1``, an epoch) by packaging, whose parse is copied. A specifier
set of the canonical shapes (``>=2.6,<2.7``, ``==0.8.*``, ``~=1.4.2``, ``!=0.7.1``) is matched
here as PEP 440 says; any other by packaging. tests/test_versions.py holds both to packaging on
every specifier and version of rules/ and on generated ones.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # an annotation only: packaging loads when a caller needs the object
    from packaging.specifiers import SpecifierSet

#: A version of the canonical shapes: release, pre-release, post, dev, local label.
_VERSION = re.compile(
    r"([0-9]+(?:\.[0-9]+)*)(?:(a|b|rc)([0-9]+))?(?:\.post([0-9]+))?(?:\.dev([0-9]+))?"
    r"(?:\+([a-z0-9]+(?:\.[a-z0-9]+)*))?",
    re.ASCII,
)
#: One specifier of the canonical shapes, ``op version``: a release, then ``.*`` or a pre-,
#: post- and dev-release suffix (what depends on the operator is checked in ``_specifier``).
SPECIFIER = re.compile(
    r"(~=|==|!=|<=|>=|<|>)[ \t]*([0-9]+(?:\.[0-9]+)*)"
    r"(?:(\.\*)|(?:(a|b|rc)([0-9]+))?(?:\.post([0-9]+))?(?:\.dev([0-9]+))?)",
    re.ASCII,
)


class InvalidVersion(ValueError):
    """Not a PEP 440 version."""


class Version:
    """A PEP 440 version with the attributes and the order of packaging's ``Version``."""

    __slots__ = ("epoch", "release", "pre", "post", "dev", "_local", "_key")

    def __init__(
        self,
        release: tuple[int, ...],
        pre: tuple[str, int] | None = None,
        post: int | None = None,
        dev: int | None = None,
        local: tuple[int | str, ...] | None = None,
        epoch: int = 0,
    ) -> None:
        self.epoch, self.release, self.pre, self.post, self.dev = epoch, release, pre, post, dev
        self._local = local
        trimmed = list(release)
        while trimmed and trimmed[-1] == 0:
            trimmed.pop()
        # packaging's order: a dev build of a final release before its pre-releases, a missing
        # post-release before any, a missing dev build after any; local labels after none,
        # numeric segments after alphanumeric ones
        self._key: tuple[Any, ...] = (
            epoch,
            tuple(trimmed),
            (-1,) if pre is None and post is None and dev is not None else (1,) if pre is None else (0, *pre),
            (-1,) if post is None else (0, post),
            (1,) if dev is None else (0, dev),
            () if local is None else tuple((1, p, "") if isinstance(p, int) else (0, 0, p) for p in local),
        )

    @property
    def local(self) -> str | None:
        return ".".join(map(str, self._local)) if self._local is not None else None

    @property
    def base_version(self) -> str:
        return (f"{self.epoch}!" if self.epoch else "") + ".".join(map(str, self.release))

    @property
    def public(self) -> str:
        return str(self).split("+", 1)[0]

    @property
    def is_prerelease(self) -> bool:
        return self.dev is not None or self.pre is not None

    @property
    def is_postrelease(self) -> bool:
        return self.post is not None

    @property
    def is_devrelease(self) -> bool:
        return self.dev is not None

    @property
    def major(self) -> int:
        return self.release[0] if self.release else 0

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) >= 2 else 0

    @property
    def micro(self) -> int:
        return self.release[2] if len(self.release) >= 3 else 0

    def __str__(self) -> str:
        text = self.base_version
        if self.pre is not None:
            text += f"{self.pre[0]}{self.pre[1]}"
        if self.post is not None:
            text += f".post{self.post}"
        if self.dev is not None:
            text += f".dev{self.dev}"
        if self._local is not None:
            text += f"+{self.local}"
        return text

    def __repr__(self) -> str:
        return f"<Version({str(self)!r})>"

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return self._key == other._key if isinstance(other, Version) else NotImplemented

    def __ne__(self, other: object) -> bool:
        return self._key != other._key if isinstance(other, Version) else NotImplemented

    def __lt__(self, other: Version) -> bool:
        return self._key < other._key if isinstance(other, Version) else NotImplemented

    def __le__(self, other: Version) -> bool:
        return self._key <= other._key if isinstance(other, Version) else NotImplemented

    def __gt__(self, other: Version) -> bool:
        return self._key > other._key if isinstance(other, Version) else NotImplemented

    def __ge__(self, other: Version) -> bool:
        return self._key >= other._key if isinstance(other, Version) else NotImplemented


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


def _read(text: str) -> Version:
    """``text`` as a ``Version``; ``InvalidVersion`` when it is not PEP 440."""
    m = _VERSION.fullmatch(text)
    if m is not None:
        release, letters, pre, post, dev, local = m.groups()
        return Version(
            tuple(int(x) for x in release.split(".")),
            (letters, int(pre)) if letters else None,
            _int(post),
            _int(dev),
            tuple(int(p) if p.isdigit() else p for p in local.split(".")) if local else None,
        )
    from packaging.version import InvalidVersion as Invalid
    from packaging.version import Version as Parsed

    try:
        v = Parsed(text)
    except Invalid:
        raise InvalidVersion(text) from None
    local = tuple(int(p) if p.isdigit() else p for p in v.local.split(".")) if v.local else None
    return Version(v.release, v.pre, v.post, v.dev, local, v.epoch)


@lru_cache(maxsize=1024)
def parse(text: str | None) -> Version | None:
    """A ``Version`` or None when the string is not PEP 440 (``+cu124`` labels are fine) or
    holds a number past Python's int-string limit (4,300 digits: packaging cannot read it
    either, it raises ValueError)."""
    if not text:
        return None
    try:
        return _read(text)
    except ValueError:  # InvalidVersion, or int() past ``sys.get_int_max_str_digits()``
        return None


@lru_cache(maxsize=1024)
def spec(text: str) -> SpecifierSet | None:
    """packaging's ``SpecifierSet`` of ``text``, or None when it is not one (for callers that
    read its parts; matching a version is ``satisfies``, which needs no packaging)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def spec_error(text: str) -> bool:
    """Whether ``text`` is not a PEP 440 specifier set (packaging is asked only for one that is
    not of the canonical shapes)."""
    return _specifiers(text) is None and spec(text) is None


#: A specifier longer than this is left to packaging: none of its numbers can pass Python's
#: int-string limit (4,300 digits) here
_DIGITS_READ_HERE = 4000

#: One specifier of the canonical shapes: the operator, its version, and the release prefix
#: of a wildcard (``==1.2.*``: (1, 2)) or None.
_Spec = tuple[str, Version, tuple[int, ...] | None]


def _specifier(text: str) -> _Spec | None:
    m = SPECIFIER.fullmatch(text)
    if m is None:
        return None
    op, release, star, letters, pre, post, dev = m.groups()
    if len(m.group(0)) > _DIGITS_READ_HERE:
        return None  # a number past the int-string limit: packaging's call
    parts = tuple(int(x) for x in release.split("."))
    if star:
        return (op, Version(parts), parts) if op in ("==", "!=") else None
    if op == "~=" and len(parts) < 2:
        return None
    return op, Version(parts, (letters, int(pre)) if letters else None, _int(post), _int(dev)), None


@lru_cache(maxsize=1024)
def _specifiers(text: str) -> tuple[_Spec, ...] | None:
    """The specifiers of a set of the canonical shapes (split as packaging splits), or None."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if part:
            one = _specifier(part)
            if one is None:
                return None
            out.append(one)
    return tuple(out)


def _prefix(v: Version, prefix: tuple[int, ...]) -> bool:
    """Whether ``v``'s release starts with ``prefix`` (zero-padded): ``==1.2.*``'s match."""
    release = v.release + (0,) * (len(prefix) - len(v.release))
    return v.epoch == 0 and release[: len(prefix)] == prefix


def _match(one: _Spec, v: Version) -> bool | None:
    """PEP 440's answer for one specifier and a version without local label (pre-releases
    allowed); None where packaging is asked (``<`` a final release with a post segment)."""
    op, s, prefix = one
    if prefix is not None:
        return _prefix(v, prefix) if op == "==" else not _prefix(v, prefix)
    key, skey = v._key, s._key
    if op == ">=":
        return key >= skey
    if op == "<=":
        return key <= skey
    if op == "==":
        return key == skey
    if op == "!=":
        return key != skey
    if op == "~=":
        return key >= skey and _prefix(v, s.release[:-1])
    if key[:2] != skey[:2]:  # another release: the order decides
        return key < skey if op == "<" else key > skey
    if op == "<":  # ``<V`` excludes V's pre-releases unless V is one
        if s.pre is not None or s.dev is not None:
            return key < skey
        return False if s.post is None else None
    if s.dev is not None or s.post is not None:  # ``>V`` excludes V's post-releases
        return key > skey
    return key > skey and v.pre != s.pre


def _contains(specifier: str, v: Version) -> bool | None:
    """Whether ``v`` is in the set (pre-releases count), or None when packaging must say."""
    specs = _specifiers(specifier)
    if specs is None:
        return None
    public = v if v._local is None else Version(v.release, v.pre, v.post, v.dev, None, v.epoch)
    for one in specs:
        found = _match(one, public)
        if found is None:
            return None
        if not found:
            return False
    return True


def _packaging_contains(s: SpecifierSet, *items: str) -> bool | None:
    """Whether packaging finds any of ``items`` in ``s``; None where it cannot compare (a
    number past the int-string limit raises ValueError in packaging too)."""
    try:
        return any(s.contains(item, prereleases=True) for item in items)
    except ValueError:
        return None


def contains(specifier: str, version: str) -> bool | None:
    """packaging's ``SpecifierSet(specifier).contains(version, prereleases=True)`` for a
    ``version`` that parses; None when the specifier is not one, the version does not parse
    or a number is past the int-string limit."""
    v = parse(version)
    if v is None:
        return None
    found = _contains(specifier, v)
    if found is not None:
        return found
    s = spec(specifier)
    return None if s is None else _packaging_contains(s, version)


def satisfies(version: str | None, specifier: str) -> bool | None:
    """Whether ``version`` is in ``specifier`` (pre-releases count); None if unparseable.

    A ``+cu124`` build satisfies what its public version does (pip's rule), except under
    ``===`` (arbitrary equality): there the version string as installed is compared, without
    normalisation or dropping the local label, as packaging and pip compare it
    (``===01.15.0`` holds for ``01.15.0``; ``===2.6.0`` does not for ``2.6.0+cu124``)."""
    v = parse(version)
    if v is None or version is None:
        return None
    found = _contains(specifier, v)
    if found is not None:
        return found
    s = spec(specifier)
    if s is None:
        return None
    if "===" in specifier:
        return _packaging_contains(s, version.strip())
    return _packaging_contains(s, str(v), v.public)


def _counted(v: Version) -> Version:
    """The release a version counts as for ``at_least``: a release candidate (``a``, ``b``,
    ``rc``) of X counts as X; a ``.dev`` build, a post-release and local labels as they are."""
    if v.pre is not None and v.dev is None:
        return Version(v.release, epoch=v.epoch)
    return Version(v.release, v.pre, v.post, v.dev, None, v.epoch)


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
    floor = _read(minimum)
    public = Version(v.release, v.pre, v.post, v.dev, None, v.epoch)
    return (public if floor.is_prerelease else _counted(v)) >= floor


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


_ZERO = Version((0,))


def placeholder(text: str | None) -> bool:
    """Whether ``text`` is a placeholder for a version nobody recorded, not a release: all zeros
    (``0+unknown``, versioneer's answer when it cannot tell; ``0.0.0``, a source tree's default).
    It is installed, but which release it is is not known: a range says nothing of it."""
    v = parse(text)
    return v is not None and not any(v.release)


def sort_key(text: str | None) -> Version:
    """``parse(text)`` for ``max``/``sorted``: what is not a version orders first, as 0."""
    return parse(text) or _ZERO
