"""TRL 0.15-0.17 check the batch against num_generations in GRPOTrainer.__init__: a run whose
script builds a trainer of the repository's own that derives from transformers' Trainer, not
from GRPOTrainer (WncFht/RLCR's CustomTrainer), never runs that check, so CFG002 is info there,
not "TRL refuses at init". A subclass of TRL's GRPOTrainer still runs it. Issue 35."""

from __future__ import annotations

from tests.conftest import findings, snapshot

STACK = {"trl": "0.16.1", "vllm": "0.7.3", "torch": "2.5.1", "transformers": "4.50.0"}
SCRIPT = "from my_trainer import CustomTrainer\n\ntrainer = CustomTrainer(model='m', args=None)\n"
OWN = "from transformers import Trainer\n\n\nclass CustomTrainer(Trainer):\n    pass\n"
SUB = "from trl import GRPOTrainer\n\n\nclass CustomTrainer(GRPOTrainer):\n    pass\n"
CONFIG = {"per_device_train_batch_size": 6, "num_generations": 32}


def _cfg002(tmp_path, trainer: str):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "my_trainer.py").write_text(trainer)
    launch = f"accelerate launch --num_processes 4 {tmp_path / 'train.py'}"
    return [
        f for f in findings(snapshot(4, packages=STACK), config=CONFIG, launch=launch) if f.rule == "CFG002"
    ]


def test_a_trainer_of_the_repository_that_is_no_grpotrainer_does_not_run_trls_check(tmp_path):
    (f,) = _cfg002(tmp_path, OWN)
    assert f.severity.value == "info"
    assert "CustomTrainer (" in f.message and "transformers.Trainer" in f.message


def test_a_subclass_of_grpotrainer_runs_it(tmp_path):
    (f,) = _cfg002(tmp_path, SUB)
    assert f.severity.value == "error" and "TRL refuses at init" in f.message
