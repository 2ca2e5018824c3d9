"""Without TRL installed, plan-memory and the rules assume one TRL release (the newest the
knowledge covers), plan with its defaults and say so; ``--assume`` picks another."""

from __future__ import annotations

import json

import pytest

from tests.conftest import MODERN, findings, snapshot
from tests.memory.configs import QWEN25_7B

NO_TRL = {k: v for k, v in MODERN.items() if k != "trl"}
CONFIG = {
    "model_init_kwargs": {"dtype": "bfloat16"},
    "per_device_train_batch_size": 8,
    "max_prompt_length": 512,
}


def _plan(write_json, model_dir, packages, *extra):
    from tests.conftest import run_cli

    facts = write_json(snapshot(n_gpus=1, packages=packages), "facts.json")
    cfg = write_json({**CONFIG, "model_name_or_path": model_dir(QWEN25_7B)}, "grpo.json")
    out = run_cli(
        "plan-memory",
        "--facts",
        str(facts),
        "--config",
        str(cfg),
        "--format",
        "json",
        *extra,
        "--",
        "torchrun",
        "--nproc_per_node",
        "1",
        "train.py",
    )
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def _total(data) -> int:
    return data["gpus"][0]["total_bytes"]


def test_without_trl_the_plan_uses_the_newest_trl_defaults_and_says_so(write_json, model_dir):
    installed = _plan(write_json, model_dir, MODERN)  # TRL 1.16.0
    missing = _plan(write_json, model_dir, NO_TRL)
    assert missing["setup"]["trl"] == "1.16.0"
    assert missing["setup"]["gradient_checkpointing"] is True
    assert _total(missing) == _total(installed)
    assert any(n.startswith("TRL 1.16.0") and "no TRL installed" in n for n in missing["assumed"])
    assert not any(n.startswith("TRL ") for n in installed["assumed"])


def test_plan_memory_assume_plans_for_the_named_release(write_json, model_dir):
    old = _plan(write_json, model_dir, NO_TRL, "--assume", "trl==0.15.2")
    assert old["setup"]["trl"] == "0.15.2" and old["setup"]["gradient_checkpointing"] is False
    assert not any(n.startswith("TRL ") for n in old["assumed"])
    assert _total(old) > _total(_plan(write_json, model_dir, NO_TRL))


def test_plan_memory_assume_refuses_a_non_version(write_json, model_dir):
    from tests.conftest import run_cli

    out = run_cli("plan-memory", "--model-params", "1B", "--assume", "trl==latest")
    assert out.returncode == 2 and "--assume" in out.stderr


@pytest.mark.parametrize("rule", ["PKG008"])
def test_pkg008_names_the_release_the_rules_and_plan_assume(rule):
    found = [f for f in findings(snapshot(packages=NO_TRL), config={"use_vllm": False}, select=[rule])]
    assert found and "assume TRL 1.16.0" in found[0].message
    assert "newest TRL" not in found[0].message


def test_env001_says_what_is_assumed_not_no_release():
    found = findings(snapshot(packages={}), config={"use_vllm": False}, select=["ENV001"])
    assert found and "assume TRL 1.16.0" in found[0].message
    assert "judged against no" not in found[0].message


def test_version_rules_judge_the_assumed_release_and_say_so():
    """vllm_device is a TRL 0.14–0.15 key: without TRL, CFG001 judges it against the release
    the plan assumes and names the assumption."""
    found = findings(
        snapshot(packages=NO_TRL), config={"use_vllm": True, "vllm_device": "auto"}, select=["CFG001"]
    )
    assert found and "TRL 1.16.0 (assumed: no TRL installed" in found[0].message


def test_a_finding_on_an_assumed_release_is_a_warning_not_an_error():
    found = findings(
        snapshot(packages=NO_TRL), config={"use_vllm": True, "vllm_device": "auto"}, select=["CFG001"]
    )
    assert {f.severity.value for f in found} == {"warning"}
    installed = findings(
        snapshot(packages=MODERN), config={"use_vllm": True, "vllm_device": "auto"}, select=["CFG001"]
    )
    assert {f.severity.value for f in installed} == {"error"}
