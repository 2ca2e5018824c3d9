"""Where no single fix is enough: the smallest set of the single fixes that fits, and the largest
per-device batch that fits (issue #28, 2)."""

from __future__ import annotations

from envdoctor.plan.memory.knobs import Knobs
from envdoctor.plan.memory.planner import largest_batch, smallest_fix_set, trainer_row
from envdoctor.plan.memory.shape import from_config as shape_from_config
from tests.conftest import A100_40, snapshot
from tests.memory.configs import QWEN25_05B, QWEN25_15B
from tests.memory.test_memory_rules import fired

GiB = 1024**3


def test_mem101_names_the_pair_that_fits_when_no_fix_alone_does(model_dir):
    cfg = {
        "model_name_or_path": model_dir(QWEN25_15B),
        "per_device_train_batch_size": 16,
        "max_prompt_length": 512,
        "max_completion_length": 4096,
        "gradient_checkpointing": False,
    }
    fix = fired(snapshot(n_gpus=1, model=A100_40), cfg)["MEM101"][0].fix
    assert "enough alone" not in fix
    assert "together: gradient_checkpointing: true + max_completion_length: 2048" in fix


def test_the_set_found_fits_and_none_smaller_does():
    shape = shape_from_config(QWEN25_15B, "q")
    k = Knobs(batch=8, prompt_len=512, completion_len=2048, weight_bytes=4)
    row = trainer_row(shape, k, 0, 40 * GiB)
    changes, new = smallest_fix_set(shape, k, row)
    assert len(changes) == 2 and new.total <= 40 * GiB < row.total


def test_largest_batch_is_the_edge():
    shape = shape_from_config(QWEN25_05B, "q")
    k = Knobs(batch=8, prompt_len=512, completion_len=1024, weight_bytes=2, gradient_checkpointing=True)
    cap = 40 * GiB
    b = largest_batch(shape, k, trainer_row(shape, k, 0, cap))
    assert b > 8
    assert trainer_row(shape, k.replace(batch=b), 0, cap).total <= cap
    assert trainer_row(shape, k.replace(batch=b + 1), 0, cap).total > cap


def test_plan_memory_json_and_text_carry_them(write_json, model_dir):
    import json

    from tests.conftest import run_cli

    facts = str(write_json(snapshot(n_gpus=1, model=A100_40), "facts.json"))
    args = [
        "--facts",
        facts,
        "--model",
        model_dir(QWEN25_05B),
        "--",
        "torchrun",
        "--nproc_per_node",
        "1",
        "train.py",
    ]
    row = json.loads(run_cli("plan-memory", "--format", "json", *args).stdout)["gpus"][0]
    assert row["fits_with"] is None and row["largest_batch_that_fits"] >= 8
    assert "largest per_device_train_batch_size that fits: " in run_cli("plan-memory", *args).stdout
