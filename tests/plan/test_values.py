"""Config values as TRL's parser (HfArgumentParser over argparse) reads them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.plan.values import as_bool, type_problem


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("yes", True),
        ("T", True),
        ("1", True),
        ("No", False),
        ("f", False),
        ("0", False),
        ("maybe", None),
        (1, None),
        (None, None),
        ("", None),
    ],
)
def test_as_bool_follows_string_to_bool(value, expected):
    assert as_bool(value) is expected


@pytest.mark.parametrize(
    ("value", "kind", "optional", "ok"),
    [
        (8, "int", False, True),
        ("8", "int", False, True),
        ("eight", "int", False, False),
        (8.5, "int", False, False),
        (True, "int", False, False),
        ([1], "int", False, False),
        ("1e-5", "float", False, True),
        (3, "float", False, True),
        ("high", "float", False, False),
        (None, "int", True, True),
        (None, "int", False, False),
        ("maybe", "bool", False, False),
        ("true", "bool", False, True),
        ("cuda:1", "str", True, True),
        (0, "str", True, True),
        ({"a": 1}, "str", False, False),
    ],
)
def test_type_problem(value, kind, optional, ok):
    assert (type_problem(value, kind, optional) is None) is ok


@settings(max_examples=300)
@given(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.lists(st.integers(), max_size=3)
    ),
    st.sampled_from(["int", "float", "bool", "str"]),
    st.booleans(),
)
def test_type_problem_never_raises_and_agrees_with_conversion(value, kind, optional):
    problem = type_problem(value, kind, optional)
    assert problem is None or isinstance(problem, str)
    if isinstance(value, str) and kind in ("int", "float"):
        try:
            (int if kind == "int" else float)(value)
            converts = True
        except ValueError:
            converts = False
        assert (problem is None) is converts
