"""Layout fixes use the launcher's own flag for the process count."""

from __future__ import annotations

import pytest

from tests.conftest import LEGACY, findings, snapshot

CFG = {"use_vllm": True, "vllm_device": "auto", "num_generations": 2, "per_device_train_batch_size": 2}


@pytest.mark.parametrize(
    ("launch", "fix"),
    [
        ("torchrun --nproc_per_node 2 t.py", "torchrun --nproc_per_node 1 t.py"),
        ("deepspeed --num_gpus 2 t.py", "deepspeed --num_gpus 1 t.py"),
    ],
)
def test_no_gpu_left_for_vllm_fix_speaks_the_launchers_flag(launch, fix):
    (lay002,) = [
        f for f in findings(snapshot(2, packages=LEGACY), config=CFG, launch=launch) if f.rule == "LAY002"
    ]
    assert lay002.fix == f"leave one GPU for vLLM: {fix}"


def test_accelerates_flag_where_more_than_one_rank_is_left():
    """accelerate keeps its own flag while two ranks or more are left; one rank left under
    accelerate is the DataParallel trap (tests/checks/test_one_rank_left_for_training.py)."""
    launch = "accelerate launch --num_processes 3 t.py"
    (lay002,) = [
        f for f in findings(snapshot(3, packages=LEGACY), config=CFG, launch=launch) if f.rule == "LAY002"
    ]
    assert lay002.fix == "leave one GPU for vLLM: accelerate launch --num_processes 2 t.py"
