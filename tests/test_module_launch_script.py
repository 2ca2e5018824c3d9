"""`python -m training.train_grpo …` runs training/train_grpo.py: envdoctor reads that file as the
training script, as it reads `python training/train_grpo.py` (its own argparse flags are its
own, not GRPOConfig typos; `fix` does not drop them from the line). RedButton 7e01228
(heldout-2026-11-28e): `--per-device-batch-size` was warned as CFG004 and taken off the line."""

from __future__ import annotations

import json

from tests.conftest import run_cli

SCRIPT = """\
import argparse
from trl import GRPOConfig, GRPOTrainer

p = argparse.ArgumentParser()
p.add_argument("--per-device-batch-size", type=int, default=4)
p.add_argument("--num-generations", type=int, default=4)
args = p.parse_args()
cfg = GRPOConfig(output_dir="o", per_device_train_batch_size=args.per_device_batch_size,
                 num_generations=args.num_generations)
GRPOTrainer(model="m", args=cfg, reward_funcs=[])
"""
LINE = ["python", "-m", "training.train_grpo", "--per-device-batch-size", "4", "--num-generations", "4"]


def _loud(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == rule and f["severity"] != "info"]


def test_a_module_launch_reads_the_modules_file(tmp_path):
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "train_grpo.py").write_text(SCRIPT)
    args = ["--assume", "trl==1.2.0", "--format", "json", "--", *LINE]
    out = json.loads(run_cli("check", *args, cwd=tmp_path).stdout)
    assert not _loud(out, "CFG004")
    assert "train_grpo.py" in json.dumps(out)
    fixed = json.loads(run_cli("fix", *args, cwd=tmp_path).stdout)
    assert "--per-device-batch-size" in " ".join(fixed["changes"]["launch"] or LINE)


def test_a_package_main_is_read_and_an_absent_module_stays_unread(tmp_path):
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__main__.py").write_text(SCRIPT)
    args = ["--assume", "trl==1.2.0", "--format", "json", "--"]
    out = json.loads(run_cli("check", *args, "python", "-m", "trainer", *LINE[3:], cwd=tmp_path).stdout)
    assert not _loud(out, "CFG004")
    line = ["python", "-m", "elsewhere.mod", *LINE[3:]]
    gone = json.loads(run_cli("check", *args, *line, cwd=tmp_path).stdout)
    assert "__main__" not in json.dumps(gone)
