"""plan-memory as a newcomer reads it: the setup line names the dtype the weights row holds, a
batch that never fits says so and why, the assumptions are listed once, and the output says
whether the plan lies within the range measured on GPUs (envdoctor/plan/memory/measured.py)."""

from __future__ import annotations

import json

from envdoctor.plan.memory import measured
from tests.conftest import run_cli

GRPO = (
    "model_name_or_path: Qwen/Qwen2.5-7B\nper_device_train_batch_size: 64\nnum_generations: 8\n"
    "bf16: true\nmax_completion_length: 4096\n"
)
ZERO3 = (
    "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
    "  zero_stage: 3\nmixed_precision: bf16\nnum_processes: 2\n"
)


def _plan(tmp_path, *extra, params="7.6B", memory="24GiB", accelerate=ZERO3):
    (tmp_path / "g.yaml").write_text(GRPO)
    (tmp_path / "acc.yaml").write_text(accelerate)
    return run_cli(
        "plan-memory", "--config", "g.yaml", "--model-params", params, "--gpu-memory", memory,
        "--assume", "trl==1.16.0", *extra, "--", "accelerate", "launch", "--config_file", "acc.yaml",
        "train.py", cwd=tmp_path,
    )  # fmt: skip


def test_setup_line_names_the_weights_the_table_holds_under_zero3(tmp_path):
    out = _plan(tmp_path).stdout
    setup = next(line for line in out.splitlines() if line.startswith("setup:"))
    assert "16-bit weights (DeepSpeed bf16; the 32-bit master copy is in the optimizer states)" in setup
    assert "× 2 B" in out and ", 32-bit weights" not in setup


def test_no_batch_fits_is_said_with_why(tmp_path):
    out = _plan(tmp_path).stdout
    assert "largest per_device_train_batch_size that fits: 0" not in out
    assert "no per_device_train_batch_size fits, not even 1: batch 1 still needs ~" in out
    data = json.loads(_plan(tmp_path, "--format", "json").stdout)
    (row,) = data["gpus"][:1]
    assert row["largest_batch_that_fits"] == 0 and row["batch_1_total_bytes"] > row["capacity_bytes"]


def test_assumptions_are_listed_once(tmp_path):
    out = _plan(tmp_path).stdout
    assert out.count("max_prompt_length=512") == 1 and out.count("assumed like Qwen2.5-7B") == 1
    mem101 = next(line for line in out.splitlines() if line.startswith("✗ MEM101"))
    assert "Assumed:" not in mem101


def test_the_measured_range_is_said_and_is_data(tmp_path):
    over = _plan(tmp_path, params="14B").stdout  # ZeRO-3 at 14B: beyond the 7.6B measured sharded
    assert (
        f"measured: extrapolated: 14.00B parameters is beyond the range measured on GPUs up to "
        f"{measured.MEASURED_SHARDED_PARAMS / 1e9:.1f}B parameters under ZeRO-3" in over
    )
    ddp = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
    within = _plan(tmp_path, params="1.5B", memory="80GiB", accelerate=ddp).stdout
    assert "measured: within the range measured on GPUs up to 7.6B parameters" in within
    assert measured.RECORD in within
    beyond = _plan(tmp_path, params="14B", memory="80GiB", accelerate=ddp).stdout
    assert "measured: extrapolated: 14.00B parameters" in beyond
