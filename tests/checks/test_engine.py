"""The engine: a rule that raises is reported as an internal error; the others still run."""

from __future__ import annotations

from envdoctor.checks import registry
from tests.conftest import findings, snapshot


def test_a_rule_raising_is_an_internal_error_and_the_others_still_run(monkeypatch):
    entry = registry.all_rules()["CFG003"]

    def broken(ctx):
        raise KeyError("boom")
        yield  # pragma: no cover

    monkeypatch.setitem(registry.RULES, "CFG003", registry.RuleEntry("CFG003", broken, entry.needs))
    found = findings(snapshot(1), config={"num_generations": 1, "num_generation": 4})
    crash = [f for f in found if f.rule == "CFG003"]
    assert len(crash) == 1 and crash[0].severity.value == "error" and crash[0].evidence["internal"]
    assert "failed internally: KeyError" in crash[0].message and "traceback" in crash[0].evidence
    assert any(f.rule == "CFG004" for f in found)  # the rule after it ran


def test_a_rule_reports_at_most_max_per_rule_then_one_line_with_the_worst_left_out(monkeypatch):
    from envdoctor.checks.engine import MAX_PER_RULE
    from envdoctor.checks.registry import Hit
    from envdoctor.findings import Severity

    entry = registry.all_rules()["CFG003"]

    def chatty(ctx):
        for i in range(MAX_PER_RULE + 7):
            yield Hit(f"hit {i}", severity=Severity.ERROR if i == MAX_PER_RULE + 3 else Severity.INFO)

    monkeypatch.setitem(registry.RULES, "CFG003", registry.RuleEntry("CFG003", chatty, entry.needs))
    found = [f for f in findings(snapshot(1), config={"num_generations": 2}) if f.rule == "CFG003"]
    assert len(found) == MAX_PER_RULE + 1
    last = found[-1]
    assert last.evidence == {"left_out": 7} and last.severity is Severity.ERROR
    assert "7 more CFG003 findings" in last.message
