"""A script that builds only a trainer of TRL's own outside GRPO's class tree (TRL 1.0's
trl.experimental.async_grpo.AsyncGRPOTrainer derives from TRL's base trainer, its AsyncGRPOConfig
from the base config) never runs GRPO's batch check (GRPOTrainer.__init__ in TRL 0.15-0.17,
GRPOConfig.__post_init__ from 0.18): CFG002 says so at info instead of "TRL refuses at init".
Whether a class derives from GRPOTrainer is read from TRL's symbol history, so a TRL trainer that
does (trl.experimental's GRPOWithReplayBufferTrainer) is still judged. Issue 35."""

from __future__ import annotations

from envdoctor.knowledge.symbol_history import history
from envdoctor.plan.script_reader import read_script
from tests.conftest import findings, snapshot

STACK = {"trl": "1.0.0", "vllm": "0.17.1", "torch": "2.10.0", "transformers": "4.57.1"}
CONFIG = {"per_device_train_batch_size": 1, "num_generations": 8}

ASYNC = """\
from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

config = AsyncGRPOConfig(output_dir="./results", per_device_train_batch_size=1)
trainer = AsyncGRPOTrainer(model="Qwen/Qwen3-4B", args=config, train_dataset=None)
trainer.train()
"""

REPLAY = """\
from trl.experimental.grpo_with_replay_buffer import GRPOWithReplayBufferTrainer

trainer = GRPOWithReplayBufferTrainer(model="Qwen/Qwen3-4B", args=None, train_dataset=None)
"""


def _cfg002(tmp_path, script: str):
    (tmp_path / "train.py").write_text(script)
    launch = f"accelerate launch --num_processes 1 {tmp_path / 'train.py'}"
    found = findings(snapshot(1, packages=STACK), config=CONFIG, launch=launch)
    return [f for f in found if f.rule == "CFG002"]


def test_trls_async_grpo_trainer_runs_no_grpo_batch_check(tmp_path):
    (f,) = _cfg002(tmp_path, ASYNC)
    assert f.severity.value == "info"
    assert "AsyncGRPOTrainer" in f.message and "derives from no GRPOTrainer" in f.message


def test_a_trl_trainer_that_derives_from_grpotrainer_is_still_judged(tmp_path):
    (f,) = _cfg002(tmp_path, REPLAY)
    assert f.severity.value == "error" and "TRL refuses at init" in f.message


def test_the_symbol_history_reads_the_class_tree(tmp_path):
    h = history("trl")
    assert h is not None
    assert h.derives("AsyncGRPOTrainer", "GRPOTrainer") == 0
    assert h.derives("GRPOWithReplayBufferTrainer", "GRPOTrainer")
    assert h.derives("GFPOTrainer", "GRPOTrainer")  # through an import alias, _GRPOTrainer
    (tmp_path / "a.py").write_text(ASYNC)
    assert read_script(tmp_path / "a.py").trl_other_trainer == "AsyncGRPOTrainer"
