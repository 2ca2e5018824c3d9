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


def test_a_retyped_message_without_class_or_quotes_is_read_as_python_writes_it():
    found = findings(scan_bytes("DataParallel object has no attribute 'config'\n"))
    assert found and found[0].rule == "TRI035" and "DataParallel trap" in found[0].message


def test_such_words_in_a_run_that_trains_on_are_no_crash():
    log = (
        "note: DataParallel object has no attribute 'config', reading it from .module\n"
        "{'loss': 0.41, 'grad_norm': 1.2, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
        "{'loss': 0.39, 'grad_norm': 1.1, 'learning_rate': 1e-05, 'epoch': 0.2}\n"
    )
    assert [f for f in findings(scan_bytes(log)) if f.severity.value != "info"] == []
