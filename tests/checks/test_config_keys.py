"""CFG001 / CFG004 against the keys TRL's parser really accepts (issue 13 item 3): GRPOConfig of
the installed TRL, TrainingArguments of the installed transformers, TRL's script arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import findings, snapshot

OPEN_R1 = Path(__file__).parent / "data" / "open-r1-config_demo.yaml"
# open-r1's setup.py at that commit: trl[vllm]==0.18.0, transformers==4.52.3, torch==2.6.0,
# accelerate==1.4.0, deepspeed==0.16.8
OPEN_R1_STACK = {
    "trl": "0.18.0",
    "transformers": "4.52.3",
    "torch": "2.6.0+cu124",
    "accelerate": "1.4.0",
    "vllm": "0.8.5.post1",
    "deepspeed": "0.16.8",
}
MODERN_STACK = {
    "trl": "1.16.0",
    "transformers": "5.23.0",
    "torch": "2.11.0+cu130",
    "accelerate": "1.15.0",
    "vllm": "0.26.0",
}


def _cfg(config: dict, packages: dict, rules=("CFG001", "CFG004")) -> list:
    return [f for f in findings(snapshot(8, packages=packages), config=config) if f.rule in rules]


def test_open_r1_recipe_is_clean_on_its_own_stack():
    config = yaml.safe_load(OPEN_R1.read_text())
    found = _cfg(config, OPEN_R1_STACK, rules=("CFG001", "CFG002", "CFG003", "CFG004", "CFG005"))
    assert [f.severity.value for f in found] == ["info"]  # the recipe's own keys, said once
    assert set(found[0].evidence["keys"]) == {"chat_template", "dataset_prompt_column", "system_prompt"}


@pytest.mark.parametrize("stack", [OPEN_R1_STACK, MODERN_STACK])
@pytest.mark.parametrize(
    "key, value",
    [
        ("gradient_checkpointing_kwargs", {"use_reentrant": False}),
        ("per_device_eval_batch_size", 16),
        ("reward_funcs", ["accuracy"]),
        ("model_name_or_path", "m"),
        ("dataset_name", "d"),
    ],
)
def test_training_arguments_and_script_keys_are_known(stack, key, value):
    assert _cfg({key: value}, stack) == []


def test_typo_of_a_training_arguments_field_suggests_it():
    (hit,) = _cfg({"per_device_eval_batchsize": 4}, MODERN_STACK)
    assert hit.rule == "CFG004" and hit.evidence["suggestion"] == "per_device_eval_batch_size"


def test_training_arguments_field_gone_from_the_installed_transformers():
    (hit,) = _cfg({"warmup_ratio": 0.1}, MODERN_STACK)
    assert hit.rule == "CFG001" and hit.severity.value == "error"
    assert "transformers 5.23.0" in hit.message and "Unknown arguments from config file" in hit.message
    assert "transformers<5.15.0" in hit.fix
    assert _cfg({"warmup_ratio": 0.1}, {**MODERN_STACK, "transformers": "5.14.2"}) == []  # unscanned
    assert _cfg({"warmup_ratio": 0.1}, OPEN_R1_STACK) == []


def test_trl_before_019_drops_unknown_keys_silently():
    (hit,) = _cfg({"vllm_guided_decoding_regex": "x"}, {**OPEN_R1_STACK, "trl": "0.15.2"})
    assert "not known to TRL 0.15.2" in hit.message
    (gone,) = _cfg({"vllm_device": "auto"}, OPEN_R1_STACK)
    assert "drops it silently" in gone.message


def test_a_dev_build_of_the_release_that_adds_a_key_is_not_said_to_refuse_it():
    """TRL 0.20.0.dev0 leads to 0.20.0, which adds `importance_sampling_level`: whether the build
    has it is not known (the history holds releases), and a config written for that build most
    likely sets keys it takes, so advice; 0.19.1 refuses it (its parser fails on unknown keys): an
    error."""
    config = {"importance_sampling_level": "sequence"}
    stack = {**OPEN_R1_STACK, "trl": "0.20.0.dev0"}
    (dev,) = [f for f in findings(snapshot(packages=stack), config=config) if f.rule == "CFG001"]
    assert dev.severity.value == "info" and "development build" in dev.message
    stack = {**OPEN_R1_STACK, "trl": "0.19.1"}
    (release,) = [f for f in findings(snapshot(packages=stack), config=config) if f.rule == "CFG001"]
    assert release.severity.value == "error" and "development build" not in release.message


@pytest.mark.parametrize("trl", ["0.16.0", "0.19.0", "1.16.0"])
def test_a_step_ratio_below_one_is_a_float_field_not_a_type_error(trl):
    """logging_steps / save_steps / eval_steps are float fields (a value below 1 is a ratio of the
    run's steps); TRL 0.19+ re-declares logging_steps with an int default (phantom-reasoning's
    recipe trained with logging_steps 0.1)."""
    pk = {**OPEN_R1_STACK, "trl": trl}
    config = {"logging_steps": 0.1, "save_steps": 0.25, "eval_steps": 0.5}
    assert not [f for f in _cfg(config, pk, rules=("CFG005",)) if f.rule == "CFG005"]
    wrong = [f for f in _cfg({"logging_steps": "often"}, pk, rules=("CFG005",)) if f.rule == "CFG005"]
    assert wrong and "logging_steps" in wrong[0].message


@pytest.mark.parametrize(("sha", "quiet"), [("eab175d434", True), ("a9b27f82d6", False)])
def test_an_installed_trl_commit_is_judged_at_that_commit(sha, quiet):
    """TRL installed from its repository at a commit (pip's direct_url.json): a key of the release
    that commit leads to is judged at the commit (Azure ML's GRPO sample pinned 0.18.0.dev0 at
    eab175d434, which has vllm_mode), not warned as "may already take it"."""
    trl = {"version": "0.18.0.dev0", "origin": f"git+https://github.com/huggingface/trl.git@{sha}"}
    pk = {**OPEN_R1_STACK, "trl": trl, "vllm": "0.8.5.post1"}
    found = [f for f in _cfg({"use_vllm": True, "vllm_mode": "colocate"}, pk) if f.rule == "CFG001"]
    assert (not found) is quiet
    if not quiet:
        assert sha in found[0].message and "vllm_mode" in found[0].message


def test_a_removed_key_on_the_command_line_quotes_hfargumentparsers_own_refusal():
    from tests.conftest import MODERN, findings, snapshot

    snap = snapshot(1, packages={**MODERN, "trl": "1.5.1"})
    found = [
        f
        for f in findings(snap, launch="python -m trl.scripts.grpo --max_prompt_length 512 --output_dir o")
        if f.rule == "CFG001" and "max_prompt_length" in f.message
    ]
    assert found and "Some specified arguments are not used by the HfArgumentParser" in found[0].message


def test_a_flag_of_a_program_envdoctor_does_not_know_is_not_a_trl_typo():
    """Set 16 (not held out): `uv run train --dataset …` runs a project's own console script; its
    `--dataset` is no misspelling of TRL's `datasets`, and `fix` removed it from the launch line."""
    from tests.conftest import MODERN

    snap = snapshot(1, packages={**MODERN, "trl": "0.21.0"})
    foreign = [
        f
        for f in findings(snap, launch="uv run train --dataset /d/p.jsonl --profile smoke")
        if f.rule == "CFG004" and "dataset" in f.message
    ]
    assert foreign and all(f.severity.value == "info" for f in foreign)
    assert "a program envdoctor does not know" in foreign[0].message
    trl = [
        f
        for f in findings(snap, launch="trl grpo --dataset /d/p.jsonl --output_dir o")
        if f.rule == "CFG004" and "`dataset`" in f.message
    ]
    assert trl and trl[0].severity.value == "warning"  # TRL's own parser reads it: a typo
