"""``extra_only``: the commonest Requires-Dist shape (``name specs; extra == "x"``) is known valid
and known to apply to extra x alone without a PEP 508 parse (issue 29: 590 of a stack's 680 lines,
each parsed and evaluated three times, were a fifth of a static check). Held to packaging itself:
whatever it accepts, packaging parses, and the marker evaluates as it says."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement

from envdoctor.facts.packages import extra_only, requirement_problem

EXTRAS = ("", "vllm", "VLLM", "dev", "tests_numpy2", "tests-numpy2", "tests.numpy2", "x")


def _agrees(line: str) -> None:
    """If ``extra_only`` takes ``line``, packaging parses it and applies it to that extra only."""
    only = extra_only(line)
    if only is None:
        return
    req = Requirement(line)  # raises if extra_only took an invalid line
    assert req.marker is not None
    for e in EXTRAS:
        want = req.marker.evaluate({"extra": e})
        assert want == (only == e.lower().replace("_", "-").replace(".", "-")), (line, e)
    assert requirement_problem(line) is None


@pytest.mark.parametrize(
    "line",
    [
        'torch>=2.0; extra == "torch"',
        "a;extra=='x'",
        'a ;extra == "x"',
        'a>=1.0;extra=="x"',
        'a[b]>=1,<2 ; extra == "x"',
        'a[b, c] >= 1.0rc1.post2.dev3 ; extra == "tests_numpy2"',
        'a==1.*;extra=="x"',
        'a!=1.0.*; extra == "X.Y"',
        'a~=1.4.2; extra == "x"',
        'a <2.0a1; extra=="x"',
        'huggingface-hub<2.0,>=1.3.0; extra == "dev"',
        'a (>=1); extra == "x"',
        'a [b] ( >=1 , <2 ) ;extra == "x"',
    ],
)
def test_common_lines_are_taken(line):
    assert extra_only(line) is not None
    _agrees(line)


@pytest.mark.parametrize(
    "line",
    [
        'a>=1.0.*; extra == "x"',
        'a~=1; extra == "x"',
        'a; extra == "x" and python_version < "3"',
        'a; python_version < "3"',
        "a>=1",
        'a @ https://x/a.whl ; extra == "x"',
        'a;\u00a0extra == "x"',
        'a; extra == "x-"',
        'a; "x" == extra',
        'a>=1,; extra == "x"',
        'a (); extra == "x"',
        'a (>=1; extra == "x"',
        'a>=\u0661; extra == "x"',
        'a; extra != "x"',
        'a>=1.0+local; extra == "x"',
        '-a; extra == "x"',
        'a; extra == "x"\n',
    ],
)
def test_other_lines_are_left_to_packaging(line):
    assert extra_only(line) is None


_ident = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,6}[A-Za-z0-9])?", fullmatch=True)
_ws = st.sampled_from(["", " ", "  ", "\t", "\u00a0", "\n"])
_op = st.sampled_from(["~=", "==", "!=", "<=", ">=", "<", ">", "===", "=", "=>", ""])
_version = st.from_regex(
    r"[0-9]{1,3}(\.[0-9]{1,3}){0,3}(\.\*|(a|b|rc|c|alpha)[0-9]|\.post1|\.dev0|"
    r"\+loc|-1|\.|)",
    fullmatch=True,
)


@st.composite
def _lines(draw: st.DrawFn) -> str:
    parts = [draw(_ident), draw(_ws)]
    if draw(st.booleans()):
        parts += ["[", draw(_ws), ",".join(draw(st.lists(_ident, max_size=3))), draw(_ws), "]"]
    specs = draw(st.lists(st.tuples(_op, _ws, _version), max_size=3))
    text = ",".join(f"{op}{ws}{v}" for op, ws, v in specs)
    opening, closing = draw(st.sampled_from([("", ""), ("(", ")"), ("( ", " )"), ("(", "")]))
    parts.append(f"{opening}{text}{closing}")
    quote = draw(st.sampled_from(['"', "'", "\"'"]))
    parts += [
        draw(_ws),
        draw(st.sampled_from([";", "", ";;"])),
        draw(_ws),
        "extra",
        draw(_ws),
        draw(st.sampled_from(["==", "!=", "="])),
        draw(_ws),
        quote[0],
        draw(_ident),
        quote[-1],
        draw(st.sampled_from(["", " ", ' and extra == "y"'])),
    ]
    return "".join(parts)


@settings(max_examples=1000, deadline=None)
@given(_lines())
def test_extra_only_agrees_with_packaging(line):
    _agrees(line)


def test_invalid_lines_stay_invalid():
    for line in ('a>=1.0.*; extra == "x"', 'a~=1; extra == "x"'):
        with pytest.raises(InvalidRequirement):
            Requirement(line)
        assert requirement_problem(line) is not None


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ09-_.İ ß\u0130"), max_size=12) | st.text(max_size=12))
def test_normalize_name_is_pep_503(name):
    import re

    from envdoctor.facts.interface import normalize_name

    assert normalize_name(name) == re.sub(r"[-_.]+", "-", name).lower()
