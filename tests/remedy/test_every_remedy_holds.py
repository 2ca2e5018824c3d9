"""Every rule's remedy, applied to its firing scenario (tests/checks/test_rules_fire_and_quiet.py),
makes its finding go and adds no warning or error: the remedies as the rules write them (each
candidate on its own; the exceptions listed with their reason), and the fixes ``check`` prints
after the closure's proof (every one, applied alone, holds; all together give one round)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Finding
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from envdoctor.remedy.apply import apply
from envdoctor.remedy.closure import candidates, loud, prove, why_not
from tests.checks.test_rules_fire_and_quiet import SCENARIOS
from tests.conftest import snapshot

#: (rule, candidate index) -> why the rule's own candidate does not hold on its firing scenario;
#: the closure tries the next candidate, and ``check`` never prints one of these
DOES_NOT_HOLD: dict[tuple[str, int], str] = {}


@contextmanager
def _inputs(scenario: dict) -> Iterator[tuple]:
    """(facts, plan) of a scenario, its files written to a folder that lives while it is used."""
    with tempfile.TemporaryDirectory() as tmp:
        scenario = json.loads(json.dumps(scenario).replace("{tmp}", tmp))
        for name, text in scenario.pop("files", {}).items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / name).write_text(text)
        snap_kw = dict(scenario.get("snap", {}))
        snap_kw["env"] = {"HF_HOME": f"{tmp}/hf", **snap_kw.get("env", {})}
        if "packages" in snap_kw:
            snap_kw["packages"] = {k: v for k, v in snap_kw["packages"].items() if v is not None}
        facts = from_dict(snapshot(**snap_kw), "test-snapshot")
        plan = build_plan(launch=scenario.get("launch"), config_dict=scenario.get("config"), live=False)
        yield facts, plan


def _fired(rule: str, found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.rule == rule]


def _outcomes() -> dict[tuple[str, int], str | None]:
    """(rule, candidate index) -> None when the candidate holds on the rule's firing scenario,
    else why not (every finding of the rule there, its candidates in order)."""
    out: dict[tuple[str, int], str | None] = {}
    for rule in sorted(SCENARIOS):
        with _inputs(SCENARIOS[rule][0]) as (facts, plan):
            rerun = Rerun()
            before = rerun(facts, plan)
            for finding in _fired(rule, before):
                for i, cand in enumerate(candidates(finding)):
                    try:
                        after = rerun(*apply(facts, plan, cand)[:2])
                    except Exception as exc:  # noqa: BLE001 - said as the reason
                        why: str | None = f"cannot be applied: {type(exc).__name__}: {exc}"
                    else:
                        why = why_not(before, finding, after)
                    if why is not None or (rule, i) not in out:
                        out[(rule, i)] = why
    return out


def test_every_rules_own_remedy_holds_on_its_firing_scenario():
    outcomes = _outcomes()
    assert outcomes, "no rule of the scenarios has a remedy"
    failing = {k: why for k, why in outcomes.items() if why is not None}
    assert set(failing) == set(DOES_NOT_HOLD), "\n".join(f"{k}: {w}" for k, w in sorted(failing.items()))


@pytest.mark.parametrize("rule", sorted(SCENARIOS))
def test_each_printed_fix_holds_alone_and_all_together(rule):
    with _inputs(SCENARIOS[rule][0]) as (facts, plan):
        rerun = Rerun()
        before = rerun(facts, plan)
        for finding in prove(facts, plan, before, rerun):
            if finding.rule != rule or finding.remedy is None:
                continue
            for remedy in candidates(finding):
                after = rerun(*apply(facts, plan, remedy)[:2])
                assert why_not(before, finding, after) is None, (finding.fix, remedy)
        closure = close(facts, plan, rerun, before=before)
        assert closure.one_round
        for f in closure.after:  # what is left is what no fix reached, and said why
            if loud(f) and not f.evidence.get("left_out"):
                assert any(r == f.rule and why for r, why in closure.unfixed), f.rule
