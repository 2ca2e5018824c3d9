"""CFG010: a GRPOConfig string-choice value the TRL that runs refuses (rules/knowledge/
grpo_config_choices.yaml, derived from TRL's source by scripts/derive_grpo_config_choices.py)."""

from __future__ import annotations

import pytest

from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.knowledge import knowledge
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from tests.conftest import MODERN, findings, snapshot

FIM = {"trl": "0.26.1", "transformers": "4.57.3", "torch": "2.6.0", "accelerate": "1.11.0"}


def _hits(config: dict, packages: dict) -> list:
    return [f for f in findings(snapshot(1, packages=packages), config=config) if f.rule == "CFG010"]


def test_gspo_is_no_loss_type_and_the_fix_is_the_keys_trl_means_by_it():
    """FIM-RLVR-LEAN4 6b3e61a (set 14): `loss_type: gspo` on TRL 0.26 raises "Unknown loss type"
    in _compute_loss at the first step; GSPO in TRL is importance_sampling_level: sequence."""
    (hit,) = _hits({"loss_type": "gspo"}, FIM)
    assert hit.severity is Severity.ERROR
    assert "first training step" in hit.message and "_compute_loss" in hit.message
    assert "bnpo, cispo, dapo, dr_grpo, grpo, sapo" in hit.message
    assert "paper_index#group-sequence-policy-optimization" in hit.message
    first = hit.remedy
    assert first.config_set == {"importance_sampling_level": "sequence", "loss_type": "grpo"}
    # gspo is GSPO, not a misspelt sapo: no "nearest value" beside the keys it means
    assert not any(r.config_set == {"loss_type": "sapo"} for r in hit.alternatives)
    facts = from_dict(snapshot(1, packages=FIM), "snap")
    closure = close(facts, build_plan(config_dict={"loss_type": "gspo"}, live=False), Rerun())
    assert "CFG010" in closure.fixed and closure.one_round
    assert closure.changes.config_set == {"importance_sampling_level": "sequence", "loss_type": "grpo"}
    assert not [f for f in closure.after if f.severity is not Severity.INFO]


@pytest.mark.parametrize(
    "config",
    [
        {"loss_type": "grpo", "importance_sampling_level": "sequence"},
        {"loss_type": "dapo"},
        {"scale_rewards": False},  # a bool TRL maps to "none" itself
        {"scale_rewards": "batch"},
        {"multi_objective_aggregation": "normalize_then_sum"},
    ],
)
def test_values_the_release_takes_are_quiet(config):
    assert _hits(config, FIM) == []
    assert _hits(config, MODERN) == []


def test_a_value_a_newer_release_takes_offers_the_upgrade():
    """dapo arrived in TRL 0.22: on 0.21 the loss raises; the fixes are the nearest value 0.21
    takes or TRL 0.22.0 (the closure keeps the first that holds)."""
    (hit,) = _hits({"loss_type": "dapo"}, {**FIM, "trl": "0.21.0"})
    assert hit.severity is Severity.ERROR and "bnpo, dr_grpo, grpo" in hit.message
    assert any(r.packages == {"trl": "0.22.0"} for r in (hit.remedy, *hit.alternatives))


def test_a_typo_gets_the_nearest_value():
    (hit,) = _hits({"importance_sampling_level": "sequnce"}, MODERN)
    wanted = {"importance_sampling_level": "sequence"}
    assert any(r.config_set == wanted for r in (hit.remedy, *hit.alternatives))


def test_a_key_no_check_refuses_is_not_judged():
    """vllm_mode's other values fall through to a default branch (no raise): not judged."""
    assert _hits({"use_vllm": True, "vllm_mode": "colocated"}, MODERN) == []


def test_a_release_past_the_horizon_is_said_at_info():
    (hit,) = _hits({"loss_type": "gspo"}, {**MODERN, "trl": "1.17.0"})
    assert hit.severity is Severity.INFO and "newer than envdoctor knows" in hit.message
    assert not any(r.packages for r in (hit.remedy, *hit.alternatives))


def test_the_table_covers_the_releases_and_keys_the_brief_names():
    table = knowledge().grpo_choices
    assert {"0.14.0", "0.26.1", "1.16.0"} <= set(table["releases"])
    keys = table["choices"]
    assert {"loss_type", "importance_sampling_level", "scale_rewards", "vllm_mode"} <= set(keys)
    assert {s["refused_at"] for s in keys["loss_type"]} == {"first_step"}


_TRL_CLI = "trl grpo --model_name_or_path Qwen/Qwen2.5-0.5B --dataset_name trl-lib/tldr "


def _launch_hits(args: str, packages: dict) -> list:
    snap = snapshot(1, packages=packages)
    return [f for f in findings(snap, launch=_TRL_CLI + args) if f.rule == "CFG010"]


@pytest.mark.parametrize("trl", ["0.24.0", "1.16.0"])
@pytest.mark.parametrize("typed", ["--scale_rewards False", "--scale_rewards=false"])
def test_a_command_lines_false_is_text_to_a_str_field(trl, typed):
    """`--scale_rewards False` (written for TRL < 0.22, where the field was a bool; e.g. GPG's
    and simpleR1's launch scripts): from 0.22 the field is `str`, TRL's parser keeps "False",
    which GRPOConfig's {True: "group", False: "none"} map does not take, and the first step
    raises "Invalid value for scale_rewards: False" (1.16: under the default
    multi_objective_aggregation, sum_then_normalize)."""
    (hit,) = _launch_hits(typed, {**FIM, "trl": trl})
    assert hit.severity is Severity.ERROR and "first training step" in hit.message
    assert f"`scale_rewards: {typed.split()[-1].split('=')[-1]}`" in hit.message


@pytest.mark.parametrize(
    "trl, args",
    [
        ("0.21.0", "--scale_rewards False"),  # a bool field then
        ("0.24.0", "--scale_rewards none"),
        ("1.16.0", "--scale_rewards False --multi_objective_aggregation normalize_then_sum"),
    ],
)
def test_scale_rewards_where_trl_takes_it_is_quiet(trl, args):
    assert _launch_hits(args, {**FIM, "trl": trl}) == []


def test_a_check_under_a_setting_the_config_gives_is_judged():
    """TRL 0.22-0.29 checks vllm_mode only under use_vllm (GRPOTrainer.__init__)."""
    (hit,) = _launch_hits("--use_vllm --vllm_mode colo", {**FIM, "trl": "0.24.0"})
    assert "GRPOTrainer(...) raises" in hit.message and "colocate, server" in hit.message
    assert _launch_hits("--vllm_mode colo", {**FIM, "trl": "0.24.0"}) == []  # use_vllm off: not read


@pytest.mark.parametrize("trl", ["0.24.0", "1.16.0"])
def test_the_fix_for_a_command_lines_false_is_none_and_clears(trl):
    """The fix says what the bool meant (False -> none), and the launch it writes rechecks clean."""
    packages = {**FIM, "trl": trl}
    (hit,) = _launch_hits("--scale_rewards False", packages)
    assert hit.remedy.config_set == {"scale_rewards": "none"}
    facts = from_dict(snapshot(1, packages=packages), "snap")
    closure = close(facts, build_plan(launch=_TRL_CLI + "--scale_rewards False", live=False), Rerun())
    assert "CFG010" in closure.fixed and closure.one_round
    assert not [f for f in closure.after if f.rule == "CFG010"]
    assert {f.rule for f in closure.after} <= {f.rule for f in closure.before}


_RANK = """from trl import GRPOConfig, {trainer}

config = GRPOConfig(output_dir="out", importance_sampling_level="item")
trainer = {trainer}(model="Qwen/Qwen2.5-0.5B-Instruct", args=config, reward_funcs=[])
trainer.train()
"""


@pytest.mark.parametrize("trainer", ["GRPOTrainer", "RankGRPOTrainer"])
def test_a_loss_check_of_grpotrainer_is_not_another_trainers(tmp_path, trainer):
    """Rank-GRPO: its install step copies RankGRPOTrainer (a transformers Trainer of its own,
    whose loss takes importance_sampling_level "item") into the installed trl, and the script
    imports it from there. TRL's GRPOTrainer raises on "item" in _compute_loss; no TRL release
    has a RankGRPOTrainer, so the check of GRPOTrainer's loss is not the run's."""
    script = tmp_path / "train.py"
    script.write_text(_RANK.format(trainer=trainer))
    packages = {**FIM, "trl": "0.21.0"}
    hits = [
        f for f in findings(snapshot(1, packages=packages), launch=f"python {script}") if f.rule == "CFG010"
    ]
    if trainer == "GRPOTrainer":
        assert [h.severity for h in hits] == [Severity.ERROR]
        assert "_compute_loss" in hits[0].message
    else:
        assert hits == []


def test_a_loss_check_of_grpotrainer_is_not_trls_other_trainers(tmp_path):
    """A script that parses GRPOConfig's keys (TrlParser) and builds TRL's RLOOTrainer, which
    derives from no GRPOTrainer (TRL's symbol history): GRPOTrainer's _compute_loss check of
    importance_sampling_level is not the run's (``runs_grpo`` says False)."""
    script = tmp_path / "train.py"
    script.write_text(
        "from trl import GRPOConfig, RLOOTrainer, TrlParser\n\n"
        "(args,) = TrlParser((GRPOConfig,)).parse_args_and_config()\n"
        "trainer = RLOOTrainer(model='Qwen/Qwen2.5-0.5B-Instruct', args=args, reward_funcs=[])\n"
        "trainer.train()\n"
    )
    packages = {**FIM, "trl": "0.21.0"}
    found = findings(
        snapshot(1, packages=packages),
        config={"output_dir": "o", "importance_sampling_level": "item"},
        launch=f"python {script}",
    )
    assert [f for f in found if f.rule == "CFG010"] == []


def test_an_alias_older_than_its_keys_says_from_which_release():
    """gspo on TRL 0.19.1: importance_sampling_level arrived in 0.20.0; the message must not say
    that 0.19.1 has it (the rv16c review)."""
    (hit,) = _hits({"loss_type": "gspo"}, {**FIM, "trl": "0.19.1"})
    assert "from TRL 0.20.0" in hit.message and "has no such setting" in hit.message
