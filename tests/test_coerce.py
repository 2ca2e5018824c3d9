"""``coerce.as_int``: the one integer coercion (configs, launch lines, environment, JSON)."""

from __future__ import annotations

import pytest

from envdoctor.coerce import as_int


@pytest.mark.parametrize(
    ("value", "kwargs", "expected"),
    [
        ("8", {}, 8),
        (8.9, {}, 8),
        (None, {}, None),
        ("abc", {"default": 3}, 3),
        (float("inf"), {"default": 3}, 3),
        ("9" * 5000, {"default": 3}, 3),  # more digits than Python converts
        ("0", {"default": 1, "low": 1}, 1),
        ("-4", {"default": 1, "low": 1}, 1),
        (10**8, {"default": 8, "low": 1, "high": 10**7}, 8),
        ("4", {"strict": True}, None),  # a string in config.json is not a number
        (True, {"strict": True}, None),
        (4.0, {"strict": True}, None),
        (4, {"strict": True, "low": 1}, 4),
    ],
)
def test_as_int(value, kwargs, expected):
    assert as_int(value, **kwargs) == expected
