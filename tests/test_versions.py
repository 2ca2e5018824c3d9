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
