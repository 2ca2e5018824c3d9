"""By-release key presence: only scanned releases are facts."""

from __future__ import annotations

import pytest

from envdoctor.knowledge.keys import presence

TABLE = {
    "releases_scanned": ["4.46.0", "4.52.0", "4.53.0", "5.0.0", "5.15.0"],
    "keys": {
        "old": {"since": "4.46.0", "until": "5.0.0"},
        "new": {"since": "4.53.0", "until": None},
        "gone": {"since": "4.46.0", "until": "5.15.0"},
    },
}


@pytest.mark.parametrize(
    "key, version, expected",
    [
        ("old", "4.52.3", "yes"),
        ("old", "4.53.0", "yes"),
        ("old", "4.57.1", "unknown"),
        ("old", "5.0.0", "no"),
        ("old", "4.40.0", "unknown"),
        ("new", "4.52.0", "no"),
        ("new", "4.52.3", "unknown"),
        ("new", "4.53.0", "yes"),
        ("new", "6.0.0", "yes"),
        ("gone", "5.23.0", "no"),
        ("gone", "5.14.2", "unknown"),
        ("missing", "5.0.0", "unknown"),
        ("old", None, "unknown"),
        ("old", "4.52.3+local", "yes"),
    ],
)
def test_presence(key, version, expected):
    assert presence(TABLE, key, version) == expected
