"""TRI035 on DataParallel: the wrapper transformers' Trainer applies in one process seeing several GPUs."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes

TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.11/site-packages/trl/trainer/online_dpo_trainer.py", line 590, '
    "in training_step\n"
    "    model.config.pad_token_id\n"
    '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1931, in __getattr__\n'
    "    raise AttributeError(\n"
    "AttributeError: 'DataParallel' object has no attribute 'config'\n"
)


@pytest.mark.parametrize("log", [TRACE, "AttributeError: 'DataParallel' object has no attribute 'config'\n"])
def test_dataparallel_in_a_trainers_path_is_the_trap_with_the_launch_fix(log):
    found = findings(scan_bytes(log))
    assert found and found[0].rule == "TRI035" and found[0].severity.value == "error"
    assert "DataParallel trap" in found[0].message
    assert "--nproc_per_node" in found[0].fix and "CUDA_VISIBLE_DEVICES" in found[0].fix


def test_distributed_data_parallel_keeps_the_unwrap_answer():
    found = findings(
        scan_bytes("AttributeError: 'DistributedDataParallel' object has no attribute 'config'\n")
    )
    assert found and found[0].rule == "TRI035" and "DataParallel trap" not in found[0].message
    assert "unwrap" in found[0].fix
