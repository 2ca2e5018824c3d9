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


def test_assume_trl_where_no_trl_is_installed_leaves_this_environments_stack_out():
    """A CI runner with transformers 5.24 and no TRL: `check --assume trl==0.18.0` judges the
    stack --assume names, not the runner's own packages."""
    from envdoctor.commands.options import not_training_env
    from envdoctor.facts.interface import Package

    facts = Facts(python="3.11.9", packages={"transformers": Package("5.24.0"), "numpy": Package("2.0.0")})
    not_training_env(facts, ["trl==0.18.0"])
    apply_assume(facts, ["trl==0.18.0"])
    assert "transformers" not in facts.packages and facts.unknown("transformers")
    assert facts.version("numpy") == "2.0.0" and facts.extra["not_judged_here"] == ["transformers"]


def test_assume_in_the_training_environment_overrides_only_what_it_names():
    from envdoctor.commands.options import not_training_env
    from envdoctor.facts.interface import Package

    facts = Facts(python="3.11.9", packages={"trl": Package("1.16.0"), "transformers": Package("5.24.0")})
    not_training_env(facts, ["trl==0.18.0"])
    apply_assume(facts, ["trl==0.18.0"])
    assert facts.version("transformers") == "5.24.0" and facts.version("trl") == "0.18.0"
