"""The signature data: its schema is enforced, and each signature points to a documented rule."""

from __future__ import annotations

import copy

import pytest
import yaml

from envdoctor.checks.docs import rule_docs
from envdoctor.resources import rules_dir
from envdoctor.triage.signatures import (
    SCHEMA,
    SignatureError,
    anchors,
    check_linear,
    own_signatures,
    parse,
    parse_anchors,
    signatures,
)

GOOD = {
    "id": "a-b",
    "rule": "TRI001",
    "summary": "s",
    "keywords": ["x"],
    "pattern": "x(?P<n>\\d{1,9})",
    "references": ["r"],
}


def _data(**changes) -> dict:
    entry = {**copy.deepcopy(GOOD), **changes}
    return {"schema": SCHEMA, "signatures": [{k: v for k, v in entry.items() if v is not None}]}


def test_the_shipped_file_loads_and_compiles():
    sigs = signatures()
    assert len(sigs) >= 15
    assert all(s.keywords and s.pattern.pattern and s.references for s in sigs)
    assert {s.id for s in sigs if s.fallback} == {
        "unrecognized-exception",
        "failure-line",
        "quoted-exception",
    }


def test_every_rule_and_confirm_rule_is_documented():
    docs = rule_docs()
    for s in signatures():
        assert s.rule in docs, s.id
        assert set(s.confirm_map.get("rules", ())) <= set(docs), s.id
    assert {d.area for i, d in docs.items() if i.startswith("TRI")} == {"triage"}


def test_a_valid_entry_parses():
    (sig,) = parse(
        _data(
            confirm={"package_below": {"vllm": "0.7.2"}, "layout": "dataparallel", "rules": ["PKG002"]},
            severity="warning",
        ),
        known_rules={"TRI001", "PKG002"},
    )
    assert sig.keywords == (b"x",) and sig.pattern.search("x12").group("n") == "12"
    assert sig.confirm_map["package_below"] == (("vllm", "0.7.2"),)
    assert sig.severity.value == "warning" and not sig.fallback


@pytest.mark.parametrize(
    "changes, error",
    [
        ({"extra": 1}, "unknown keys"),
        ({"pattern": "("}, "bad pattern"),
        ({"pattern": None}, "missing pattern"),
        ({"keywords": "x"}, "keywords"),
        ({"keywords": [""]}, "keywords"),
        ({"references": []}, "missing references"),
        ({"id": "Not_An_Id"}, "id must be"),
        ({"rule": "XYZ999"}, "not a documented rule"),
        ({"rule": "lay003"}, "not a documented rule"),
        ({"severity": "fatal"}, "bad severity"),
        ({"fallback": "yes"}, "fallback"),
        ({"confirm": ["rules"]}, "confirm must be a mapping"),
        ({"confirm": {"facts": 1}}, "unknown confirm keys"),
        ({"confirm": {"layout": "sideways"}}, "confirm.layout"),
        ({"confirm": {"package_below": {"vllm": "new"}}}, "package_below"),
        ({"confirm": {"rules": "PKG002"}}, "confirm.rules"),
        ({"confirm": {"rules": ["PKG999"]}}, "undocumented rules"),
    ],
)
def test_bad_entries_are_refused_with_their_name(changes, error):
    with pytest.raises(SignatureError, match=error) as exc:
        parse(_data(**changes), known_rules={"TRI001", "PKG002"})
    assert "signatures[0]" in str(exc.value)


@pytest.mark.parametrize(
    "data, error",
    [
        ({"signatures": [GOOD]}, "schema"),
        ({"schema": SCHEMA, "signatures": []}, "non-empty"),
        ({"schema": SCHEMA, "signatures": [GOOD], "more": 1}, "top-level"),
        ({"schema": SCHEMA, "signatures": [GOOD, GOOD]}, "appears twice"),
        ("just text", "schema"),
    ],
)
def test_bad_files_are_refused(data, error):
    with pytest.raises(SignatureError, match=error):
        parse(data)


def test_rule_docs_of_triage_are_valid_and_in_the_triage_area():
    data = yaml.safe_load((rules_dir() / "triage.yaml").read_text())
    assert data["area"] == "triage"
    ids = {r["id"] for r in data["rules"]}
    # TRI001-TRI023, hostenv.py's TRI025-TRI030, boundary.own_call's TRI031, usercode.py's TRI032-33,
    # raisesites.py's TRI034, wrapped.py's TRI035, structclass.py's TRI024, TRI036, roots.py's TRI037,
    # artifacts.py's TRI038, bounds.py's TRI039, locale_codec.py's TRI040, compiled.py's TRI041
    assert {f"TRI{n:03d}" for n in range(1, 42)} <= ids
    assert ids <= {f"TRI{n:03d}" for n in range(1, 42)}
    assert len(ids) == len(data["rules"])  # each id documented once
    assert all(r["id"].startswith("TRI") for r in data["rules"])
    assert rule_docs()["TRI003"].severity.value == "warning"


@pytest.mark.parametrize(
    "pattern",
    [
        r"(\w+)+x",
        r"\S*vllm\S*?\.so",
        r"x(?:a|b)*",
        r"x\d+",
        r"(?P<t>\w{1,9}) does not",
        r".{0,9}x",
        r"x(?:\w{1,4096}){1,4096}",
        r"[ab]x",
    ],
)
def test_patterns_that_could_backtrack_are_refused(pattern):
    assert check_linear(pattern)
    with pytest.raises(SignatureError, match="linear-time"):
        parse(_data(pattern=pattern), known_rules={"TRI001"})


@pytest.mark.parametrize(
    "pattern",
    [
        r"x(?P<n>\d{1,9})",
        r"^(?P<e>[A-Z][\w.]{0,200}?Error): (?P<m>.{0,2000})",
        r"ab|cd{0,3}",
        r"\(\) (?:got|missing (?P<n>\d{1,3}))",
        r"(?:x\d{1,9})",
    ],
)
def test_linear_patterns_are_accepted(pattern):
    assert check_linear(pattern) is None


def test_every_shipped_pattern_is_linear_and_every_signature_reachable_from_an_anchor():
    assert all(check_linear(s.pattern.pattern) is None for s in own_signatures())
    shipped = anchors()
    assert shipped and all(isinstance(a, bytes) and a for a in shipped)
    with pytest.raises(SignatureError, match="anchors"):
        parse_anchors({"anchors": []})
