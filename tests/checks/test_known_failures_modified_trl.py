"""A trainer class imported from trl that no TRL release has (``from trl import RankGRPOTrainer``)
marks the installed trl as a modified copy: a catalogue entry keyed on TRL's releases is not proved
for it, so KNF001 says it as a warning and why. Set 23's healthy SafeRank-GRPO (read after it was
measured): a fork of TRL 0.21 installed as trl guards the GuidedDecodingParams import that TRL 0.21
fails on under vLLM 0.13, and its log shows 1020 steps; KNF001 had said an error."""

from __future__ import annotations

from tests.conftest import findings, snapshot

PACKAGES = {"trl": "0.21.0", "vllm": "0.13.0", "torch": "2.9.0", "transformers": "4.57.3"}
SCRIPT = """\
from trl import GRPOConfig, {trainer}

args = GRPOConfig(output_dir="o", use_vllm=True, vllm_mode="colocate")
trainer = {trainer}(model="m", reward_funcs=[len], args=args)
trainer.train()
"""


def _guided(tmp_path, trainer: str) -> list:
    (tmp_path / "train.py").write_text(SCRIPT.format(trainer=trainer))
    got = findings(snapshot(1, packages=PACKAGES), launch=f"python {tmp_path / 'train.py'}")
    return [f for f in got if f.rule == "KNF001" and "GuidedDecodingParams" in f.message]


def test_a_class_no_trl_release_has_makes_the_release_keyed_failure_a_warning(tmp_path):
    (f,) = _guided(tmp_path, "RankGRPOTrainer")
    assert f.severity.value == "warning"
    assert "imports RankGRPOTrainer from trl, a class no TRL release has" in f.message


def test_trls_own_trainer_keeps_the_error(tmp_path):
    (f,) = _guided(tmp_path, "GRPOTrainer")
    assert f.severity.value == "error" and "no TRL release has" not in f.message
