"""``--assume``: the packages not named are unknown, not missing — following ENV001's advice
(`--assume trl==1.16.0 --assume vllm==0.26.0`) must not produce errors."""

from __future__ import annotations

import re

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.commands.options import apply_assume
from envdoctor.facts.interface import Facts
from envdoctor.plan.build import build_plan


def _run(packages: dict[str, str], assume: list[str], config: dict | None = None):
    from envdoctor.facts.interface import Package

    facts = Facts(python="3.11.9", packages={k: Package(v) for k, v in packages.items()})
    apply_assume(facts, assume)
    plan = build_plan(config_dict=config or {"use_vllm": True}, live=True)
    return run_rules(Context(facts=facts, plan=plan, network=False), select=["PKG", "ENV"])


def _env001_advice() -> list[str]:
    found = _run({}, [], None).findings
    (env,) = [f for f in found if f.rule == "ENV001"]
    return re.findall(r"--assume (\S+?==[\w.]+)", env.fix)


def test_following_env001s_advice_produces_no_error():
    advice = _env001_advice()
    assert advice == ["trl==1.16.0", "vllm==0.26.0"]
    found = _run({}, advice).findings
    assert [f for f in found if f.severity.value == "error"] == [], [(f.rule, f.message) for f in found]


def test_a_package_not_named_is_unknown_not_missing():
    found = _run({}, ["trl==1.16.0"]).findings
    assert not [f for f in found if "not installed" in f.message]


def test_without_assume_a_missing_package_is_still_missing():
    found = _run({"trl": "1.16.0", "vllm": "0.26.0"}, []).findings
    assert any(f.rule == "PKG004" and "torch" in f.message and f.severity.value == "error" for f in found)


def test_assumed_versions_still_judge_what_is_installed():
    found = _run({"torch": "2.5.1+cu124"}, ["vllm==0.26.0"]).findings
    assert any(f.rule == "PKG004" and "installed torch 2.5.1" in f.message for f in found)
