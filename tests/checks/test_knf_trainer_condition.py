"""A catalogue entry of GRPOTrainer's own (``when.trainer: grpo``; TRL older than 0.14 has no
GRPOTrainer) needs evidence that the run builds one before it is an error: an SFT or DPO stage on
TRL 0.12 is quiet, a script read that builds GRPOTrainer (or a subclass) keeps the error, and a run
whose script was not read gets a warning saying why. Issue 35 (gate13)."""

from __future__ import annotations

from envdoctor.plan.script_reader import read_script
from tests.conftest import findings, snapshot

STACK = {"trl": "0.12.2", "torch": "2.4.0", "transformers": "4.46.0"}
CONFIG = {"per_device_train_batch_size": 2}

SFT = """\
from trl import SFTConfig, SFTTrainer

cfg = SFTConfig(output_dir="out")
trainer = SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=cfg, train_dataset=None)
trainer.train()
"""

GRPO = """\
from trl import GRPOConfig, GRPOTrainer

cfg = GRPOConfig(output_dir="out")
trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=cfg, train_dataset=None)
trainer.train()
"""

SUBCLASS = """\
from trl import GRPOConfig, GRPOTrainer


class Mine(GRPOTrainer):
    pass


trainer = Mine(model=model, reward_funcs=[], args=GRPOConfig(output_dir="out"))
"""


def _no_grpo(tmp_path, script: str | None, launch: str | None = None):
    if script is not None:
        (tmp_path / "train.py").write_text(script)
    launch = launch or f"accelerate launch --num_processes 1 {tmp_path / 'train.py'}"
    found = findings(snapshot(1, packages=STACK), config=CONFIG, launch=launch)
    return [f for f in found if f.rule == "KNF001" and "has no GRPOTrainer" in f.message]


def test_an_sft_stage_on_trl_0_12_is_not_told_it_lacks_grpotrainer(tmp_path):
    assert _no_grpo(tmp_path, SFT) == []


def test_a_script_that_builds_grpotrainer_keeps_the_error(tmp_path):
    (f,) = _no_grpo(tmp_path, GRPO)
    assert f.severity.value == "error"


def test_a_subclass_of_grpotrainer_is_evidence_too(tmp_path):
    (f,) = _no_grpo(tmp_path, SUBCLASS)
    assert f.severity.value == "error"
    (tmp_path / "s.py").write_text(SUBCLASS)
    assert "a GRPOTrainer" in (read_script(tmp_path / "s.py").builds_grpo or "")


def test_an_unread_script_is_a_warning_that_says_why(tmp_path):
    (f,) = _no_grpo(tmp_path, None)
    assert f.severity.value == "warning"
    assert "if the run builds a GRPOTrainer" in f.message and "not read" in f.message


def test_trl_sft_is_quiet_and_trl_grpo_is_an_error(tmp_path):
    assert _no_grpo(tmp_path, None, "trl sft --model_name_or_path Qwen/Qwen2.5-0.5B") == []
    (f,) = _no_grpo(tmp_path, None, "trl grpo --model_name_or_path Qwen/Qwen2.5-0.5B")
    assert f.severity.value == "error"


def test_a_framework_asked_for_grpo_is_an_error(tmp_path):
    (f,) = _no_grpo(tmp_path, None, "swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-0.5B")
    assert f.severity.value == "error" and "--rlhf_type grpo" not in f.message
