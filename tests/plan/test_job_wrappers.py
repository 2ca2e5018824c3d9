"""A launch line submitted as a Hugging Face Job (`hf jobs run [options] IMAGE command`) runs its
command in the job's container: the command's trainer is the run's (its flags are not the job
CLI's), and the setup steps before it (pip, apt-get, git) are no launch (RedButton 6fbe20b,
heldout-2026-11-28e: `--flavor`, `--secrets`, `--detach` were read as the trainer's)."""

from __future__ import annotations

from envdoctor.plan.launch import parse_launches

JOB = (
    "hf jobs run --flavor a100-large --secrets HF_TOKEN -e WANDB_PROJECT=grpo --detach "
    "pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime bash -lc 'set -euo pipefail; pip install -U pip "
    '&& pip install "trl[vllm]==1.2.0" && apt-get install -y git && git clone https://x/r /w && cd /w '
    "&& A=1 python -m training.train_grpo --num-generations 4'"
)


def test_the_jobs_command_is_the_trainer():
    launches = parse_launches(JOB)
    assert len(launches) == 1
    trainer = launches[0]
    assert trainer.launcher == "python" and trainer.module == "training.train_grpo"
    assert trainer.script_args == ["--num-generations", "4"]
    assert trainer.env["WANDB_PROJECT"] == "grpo" and trainer.env["A"] == "1"
    assert trainer.wrappers[0].startswith("hf jobs run")


def test_the_older_spellings_and_a_plain_command():
    for head in ("huggingface-cli jobs run --flavor t4-small", "hfjobs run -d --timeout 2h"):
        (launch,) = parse_launches(f"{head} python:3.12 python train.py --beta 0.0")
        assert launch.script == "train.py" and launch.script_args == ["--beta", "0.0"]
