"""One version comparison, ``versions.at_least``: how pre-, dev- and post-releases count."""

from __future__ import annotations

import pytest

from envdoctor import versions
from envdoctor.plan.memory.knobs import from_config


@pytest.mark.parametrize(
    ("version", "minimum", "expected"),
    [
        ("0.26.0", "0.26.0", True),
        ("0.25.1", "0.26.0", False),
        ("0.26.0rc1", "0.26.0", True),  # a release candidate of X is X's code, frozen
        ("0.26.0b2", "0.26.0", True),
        ("0.26.0rc1", "0.26.1", False),
        ("0.16.0.dev0", "0.16.0", False),  # main on its way to X: X's features may not be in
        ("0.11.1rc2.dev123+g1a2b3c", "0.11.1", False),
        ("0.16.0.dev0", "0.15.2", True),
        ("0.8.5.post1", "0.8.5", True),
        ("0.8.5.post1", "0.8.6", False),
        ("2.7.1+cu126", "2.7.1", True),
        ("1.10", "1.10.0", True),
        ("0.9.0rc1", "0.9.0rc2", False),  # a pre-release minimum is compared exactly
        ("0.9.0rc2", "0.9.0rc1", True),
    ],
)
def test_at_least_counts_release_candidates_as_their_release(version, minimum, expected):
    assert versions.at_least(version, minimum) is expected
    assert versions.below(version, minimum) is (not expected)


@pytest.mark.parametrize("version", [None, "", "not-a-version"])
def test_unparseable_version_is_unknown(version):
    assert versions.at_least(version, "1.0.0") is None
    assert versions.below(version, "1.0.0") is False


def test_memory_defaults_follow_the_one_comparison():
    """TRL's completion default went 256 -> 512 in 1.10.0: its release candidate has it, a dev
    build of main before the release does not."""
    assert from_config({}, "1.10.0rc1", "bfloat16").completion_len == 512
    assert from_config({}, "1.10.0", "bfloat16").completion_len == 512
    assert from_config({}, "1.10.0.dev0", "bfloat16").completion_len == 256
    assert from_config({}, "1.9.2", "bfloat16").completion_len == 256


# -- parsing and matching without packaging, held to packaging (issue 29) ---------------------

import itertools  # noqa: E402
import json  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from packaging.specifiers import InvalidSpecifier, SpecifierSet  # noqa: E402
from packaging.version import InvalidVersion, Version  # noqa: E402

from envdoctor.resources import rules_dir  # noqa: E402

_OPS = ("<", "<=", ">", ">=", "==", "!=", "~=", "===")


def _rules_strings() -> set[str]:
    """Every string (and key) anywhere in the data of rules/."""
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(str(k))
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.add(str(value))

    for line in (rules_dir() / "compiled.jsonl").read_text(encoding="utf-8").splitlines():
        walk(json.loads(line.split("\t", 2)[2]))
    return found


def _rules_specifiers() -> list[str]:
    out = []
    for text in _rules_strings():
        if any(op in text for op in _OPS) and len(text) < 80:
            try:
                SpecifierSet(text)
            except InvalidSpecifier:
                continue
            out.append(text)
    return sorted(out)


def _neighbours(text: str) -> list[str]:
    """Versions at and around ``text``: its pre-, post-, dev-releases and local builds."""
    out = [text]
    for suffix in ("a1", "rc1", "rc1.dev1", ".post1", ".post1.dev0", ".dev0", "+cu124", ".1", ".0", ".0.0"):
        out.append(text + suffix)
    return out


def _corpus(specs: list[str]) -> list[str]:
    versions_seen = {"0", "1", "2.0", "1!1.0", "0.0.1", "99", "1.0.0-rc1", "v2.6.0", "2.6.0+cpu"}
    for text in _rules_strings():
        try:
            Version(text)
        except InvalidVersion:
            continue
        if len(text) < 40:
            versions_seen.add(text)
    for s in specs:
        for item in SpecifierSet(s):
            versions_seen.update(_neighbours(item.version.rstrip(".*").rstrip(".")))
    return sorted(versions_seen)


def _packaging_satisfies(version: str, specifier: str) -> bool | None:
    """versions.satisfies as it was, on packaging: a local build satisfies what its public
    version does, but under ``===`` the string as installed is compared (pip's answer);
    None where packaging cannot read one (a number past the int-string limit raises)."""
    try:
        v = Version(version)
        s = SpecifierSet(specifier)
        if "===" in specifier:
            return s.contains(version, prereleases=True)
        return s.contains(v, prereleases=True) or s.contains(Version(v.public), prereleases=True)
    except (InvalidVersion, InvalidSpecifier, ValueError):
        return None


def _packaging_at_least(version: str, minimum: str) -> bool | None:
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    floor = Version(minimum)
    if floor.is_prerelease:
        return Version(v.public) >= floor
    counted = Version(v.base_version) if v.pre is not None and v.dev is None else Version(v.public)
    return counted >= floor


def _same_version(text: str) -> None:
    try:
        want = Version(text)
    except ValueError:  # InvalidVersion, or a number past the int-string limit
        assert versions.parse(text) is None, text
        return
    got = versions.parse(text)
    assert got is not None, text
    assert str(got) == str(want), text
    for attr in (
        "public",
        "base_version",
        "local",
        "release",
        "pre",
        "post",
        "dev",
        "epoch",
        "is_prerelease",
    ):
        assert getattr(got, attr) == getattr(want, attr), (text, attr)
    assert got.is_postrelease == want.is_postrelease and got.is_devrelease == want.is_devrelease
    assert (got.major, got.minor, got.micro) == (want.major, want.minor, want.micro)


def test_every_specifier_of_rules_matches_as_packaging_matches():
    specs = _rules_specifiers()
    assert len(specs) > 100  # the catalogue, trl.yaml, vllm.yaml, the allocator table ...
    own = [s for s in specs if versions._specifiers(s) is not None]
    assert len(own) == len(specs), sorted(set(specs) - set(own))  # none needs packaging
    corpus = _corpus(specs)
    for v in corpus:
        _same_version(v)
    sample = corpus[::20]
    for s in specs:
        near = [n for item in SpecifierSet(s) for n in _neighbours(item.version.rstrip(".*").rstrip("."))]
        for v in near + sample:
            assert versions.satisfies(v, s) == _packaging_satisfies(v, s), (v, s)
            if versions.parse(v) is not None:
                assert versions.contains(s, v) == SpecifierSet(s).contains(v, prereleases=True), (v, s)


def test_order_and_at_least_are_packagings():
    corpus = _corpus(_rules_specifiers())
    parsed = [v for v in corpus if versions.parse(v) is not None]
    assert sorted(parsed, key=versions.sort_key) == sorted(parsed, key=Version)
    for a, b in itertools.product(parsed[::13], parsed[::13]):
        va, vb = versions.parse(a), versions.parse(b)
        assert (va == vb, va < vb, hash(va) == hash(vb) if va == vb else True) == (
            Version(a) == Version(b),
            Version(a) < Version(b),
            True,
        ), (a, b)
        if not Version(b).local and Version(b).epoch == 0:
            assert versions.at_least(a, b) == _packaging_at_least(a, b), (a, b)


#: release numbers, with leading zeros (``01.15.0``: ``===`` compares them as written) and,
#: rarely, one past Python's int-string limit (4,300 digits)
_number = st.integers(0, 12).map(str) | st.sampled_from(["01", "007", "00", "1" * 4301, "9" * 40])
_release = st.lists(_number, min_size=1, max_size=4).map(".".join)
_pre = st.sampled_from(["", "a1", "b2", "rc1", "rc0", "a0", "alpha1", "RC1", "-rc2", ".c1", "pre3", "a"])
_post = st.sampled_from(["", ".post1", ".post0", "-1", ".post", "post2", ".rev1"])
_dev = st.sampled_from(["", ".dev0", ".dev3", "dev1", ".dev"])
_local = st.sampled_from(
    ["", "+cu124", "+cpu", "+rocm6.2", "+1.a", "+a.1", "+001", "+Abc", "+g1a2b3c.d20240101"]
)
_versions = st.builds(
    lambda e, r, pre, post, dev, loc: f"{e}{r}{pre}{post}{dev}{loc}",
    st.sampled_from(["", "", "", "1!", "v"]),
    _release,
    _pre,
    _post,
    _dev,
    _local,
)
_specs = st.lists(
    st.builds(
        lambda op, r, pre, post, dev, star: f"{op}{r}{star or (pre + post + dev)}",
        st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "~=", "==="]),
        _release,
        st.sampled_from(["", "", "a1", "rc2", "b0"]),
        st.sampled_from(["", "", ".post1"]),
        st.sampled_from(["", "", ".dev0", ".dev2"]),
        st.sampled_from(["", "", ".*"]),
    ),
    min_size=1,
    max_size=3,
).map(",".join)


@settings(max_examples=1000, deadline=None)
@given(_versions)
def test_generated_versions_parse_as_packaging_parses_them(text):
    _same_version(text)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_versions, min_size=2, max_size=6), _specs)
def test_generated_specifiers_match_as_packaging_matches(texts, specifier):
    try:
        for item in SpecifierSet(specifier):
            texts += _neighbours(item.version.rstrip(".*").rstrip("."))
    except InvalidSpecifier:
        pass  # an invalid set: both say None
    for text in texts:
        assert versions.satisfies(text, specifier) == _packaging_satisfies(text, specifier), (text, specifier)
        if versions.parse(text) is not None:
            try:
                want = SpecifierSet(specifier).contains(text, prereleases=True)
            except (InvalidSpecifier, ValueError):
                want = None
            assert versions.contains(specifier, text) == want, (text, specifier)
    parsed = [t for t in texts if versions.parse(t) is not None]
    assert sorted(parsed, key=versions.sort_key) == sorted(parsed, key=Version)
