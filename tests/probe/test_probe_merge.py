"""A fault the static check said and the probe's step met too (DAT007, DAT010 on the same reward
function) is one finding in the report, with both evidences (issue 35: said twice before)."""

from __future__ import annotations

from envdoctor.doctor import with_probe
from envdoctor.findings import Finding, Severity
from envdoctor.report.interface import Area, Report


def _report(static: list[Finding], probe: list[Finding]) -> Report:
    areas = [Area(key="data", title="Data", findings=list(static)), Area(key="probe", title="Probe")]
    report = Report(areas=areas, subject="t", version="0")
    with_probe(report, Area(key="probe", title="Probe", findings=list(probe)))
    return report


def _all(report: Report) -> list[Finding]:
    return [f for a in report.areas for f in a.findings]


def test_dat010_said_statically_and_seen_in_the_probe_is_one_finding():
    static = Finding(
        "DAT010",
        Severity.ERROR,
        "reward function acc (r.py:3) returns None",
        "return [...]",
        {"function": "acc", "where": "r.py:3", "line": 7},
    )
    seen = Finding(
        "DAT010",
        Severity.ERROR,
        "reward function acc (r.py:3) returned None in the probe's step",
        "end acc with `return [...]`",
        {"function": "acc", "where": "r.py:3", "called": 1},
    )
    found = _all(_report([static], [seen]))
    assert [f.rule for f in found] == ["DAT010"]  # before: DAT010 twice
    one = found[0]
    assert one.evidence["line"] == 7 and one.evidence["probe"]["called"] == 1
    assert "returns None" in one.message and "the probe's step met it too" in one.message
    assert one.fix == "return [...]"


def test_dat007_on_another_function_stays_apart():
    static = Finding("DAT007", Severity.WARNING, "a needs x", "", {"function": "a"})
    seen = Finding("DAT007", Severity.ERROR, "b needs y", "", {"function": "b"})
    found = _all(_report([static], [seen]))
    assert sorted(f.evidence["function"] for f in found) == ["a", "b"]


def test_the_probe_raises_the_severity_of_what_it_met():
    static = Finding("DAT007", Severity.WARNING, "a may need x", "", {"function": "a"})
    seen = Finding("DAT007", Severity.ERROR, "a raised TypeError", "", {"function": "a"})
    (one,) = _all(_report([static], [seen]))
    assert one.severity == Severity.ERROR
