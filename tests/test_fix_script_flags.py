"""A value that breaks the run and comes from the training script's own argparse default (olmocr
grpo_train.py: num_generations 28 with one process × batch 1 × accumulation 8, allenai/olmocr#394)
is fixed on the trainer's launch line with the script's flag, the one place the script reads; the
closure proves it by reading the script again on the changed line (heldout-2026-11-28b)."""

from __future__ import annotations

import json

import pytest

from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from tests.conftest import run_cli, snapshot

STACK = {"trl": "0.20.0", "vllm": "0.9.2", "torch": "2.7.0", "transformers": "4.53.2", "accelerate": "1.9.0"}

OLMOCR_LIKE = """\
import argparse
from trl import GRPOConfig, GRPOTrainer

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--per_device_train_batch_size", type=int, default=1)
    p.add_argument("--gradient_accumulation_steps", type=int, default=8)
    p.add_argument("--num-gen", dest="num_generations", type=int, default=28)
    p.add_argument("--output_dir", default="out")
    args = p.parse_args()
    cfg = GRPOConfig(
        output_dir=args.output_dir,
        per_device_train_batch_size=args.per_device_train_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        num_generations=args.num_generations,
        use_vllm=True,
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=0.15,
    )
    GRPOTrainer(model="m", args=cfg, reward_funcs=[])

main()
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grpo_train.py").write_text(OLMOCR_LIKE)
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, packages=STACK)))
    return tmp_path


def test_default_from_argparse_is_fixed_by_the_flag_on_the_launch_line(here):
    facts = from_dict(snapshot(1, packages=STACK), "snap")
    plan = build_plan(launch="python grpo_train.py", live=False)
    assert plan.config["num_generations"] == 28
    closure = close(facts, plan, Rerun())
    assert closure.one_round
    assert not closure.changes.config_set  # never a key the script does not read
    line = closure.changes.launch[-1]
    assert line.startswith("python grpo_train.py --")
    assert "--num-gen " in line or "--gradient_accumulation_steps " in line


def test_the_printed_fix_names_the_scripts_option(here):
    proc = run_cli("check", "--facts", "facts.json", "--format", "json", "--", "python", "grpo_train.py")
    (hit,) = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "CFG002"]
    assert hit["fix"].startswith("pass --num-gen 8 (grpo_train.py's own option for num_generations)")
    assert "set num_generations" not in hit["fix"]


def test_fix_command_prints_the_line_and_check_on_it_is_clean(here):
    before = run_cli("check", "--facts", "facts.json", "--format", "json", "--", "python", "grpo_train.py")
    assert before.returncode == 1 and "CFG002" in before.stdout
    proc = run_cli("fix", "--facts", "facts.json", "--format", "json", "--", "python", "grpo_train.py")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout
    assert out["fixed"] == ["CFG002"] and out["changes"]["config"] == {"set": {}, "remove": []}
    assert out["after"]["summary"]["errors"] == 0
    line = out["changes"]["launch"][-1]
    again = run_cli("check", "--facts", "facts.json", "--format", "json", "--", *line.split())
    assert again.returncode == 0, again.stdout
    assert (here / "grpo_train.py").read_text() == OLMOCR_LIKE  # the script is never written


def test_the_flag_given_on_the_line_is_replaced_not_repeated(here):
    facts = from_dict(snapshot(1, packages=STACK), "snap")
    plan = build_plan(launch="python grpo_train.py --num-gen 12", live=False)
    closure = close(facts, plan, Rerun())
    line = closure.changes.launch[-1]
    assert line.count("--num-gen") <= 1 and "--num-gen 12" not in line
