"""CPU / NVMe offload: host RAM per node planned with DeepSpeed's own estimators, NVMe said as
NVMe, and offload proposed in the run's own terms (issue #28, 6).

DeepSpeed's estimators (deepspeed/runtime/zero/stage_1_and_2.py
``estimate_zero2_model_states_mem_needs``: P × max(4 × GPUs, 16) × 1.5 with cpu_offload;
stage3.py ``estimate_zero3_model_states_mem_needs``: P × 16 / nodes × 1.5 offloading the
optimizer, P × 18 / nodes × 1.5 with the parameters too, zero_init)."""

from __future__ import annotations

import pytest

from envdoctor.plan.memory.knobs import Knobs, from_config
from envdoctor.plan.memory.parts import host_plan, trainer_parts
from envdoctor.plan.memory.shape import from_config as shape_from_config
from tests.conftest import H100, snapshot
from tests.memory.configs import QWEN25_7B
from tests.memory.test_memory_rules import fired

SHAPE = shape_from_config(QWEN25_7B, "q7")
P = SHAPE.total_params()


def test_zero2_cpu_offload_host_ram_by_deepspeeds_estimator():
    host = host_plan(SHAPE, Knobs(strategy="zero2", offload_optimizer=True, world=8, node_ranks=8))
    assert host.device == "cpu" and host.bytes_per_node == int(P * 32 * 1.5)
    small = host_plan(SHAPE, Knobs(strategy="zero2", offload_optimizer=True, world=2, node_ranks=2))
    assert small.bytes_per_node == int(P * 16 * 1.5)


def test_zero3_offload_params_and_optimizer_over_two_nodes():
    both = host_plan(
        SHAPE, Knobs(strategy="zero3", offload_optimizer=True, offload_params=True, world=16, node_ranks=8)
    )
    opt = host_plan(SHAPE, Knobs(strategy="zero3", offload_optimizer=True, world=16, node_ranks=8))
    assert both.bytes_per_node == int(P * 18 / 2 * 1.5)
    assert opt.bytes_per_node == int(P * 16 / 2 * 1.5)
    assert host_plan(SHAPE, Knobs(strategy="zero3", world=8)) is None


def test_nvme_offload_is_reported_as_nvme():
    acc = {
        "distributed_type": "DEEPSPEED",
        "deepspeed_config": {
            "zero_stage": 3,
            "offload_optimizer_device": "nvme",
            "offload_param_device": "nvme",
        },
    }
    k = from_config({}, "1.16.0", "bfloat16", acc, world=8, node_ranks=8)
    assert k.offload_device == "nvme"
    opt = next(p for p in trainer_parts(SHAPE, k) if p.name == "optimizer states")
    assert "NVMe" in opt.note and "CPU" not in opt.note
    assert host_plan(SHAPE, k).device == "nvme"


FULL = {"gradient_checkpointing": True, "per_device_train_batch_size": 4}


@pytest.mark.parametrize(
    ("launch", "expect"),
    [
        ("torchrun --nproc_per_node 1 train.py", "with DeepSpeed ZeRO-2 optimizer offload"),
        (
            "accelerate launch --use_deepspeed --zero_stage 2 --num_processes 1 train.py",
            "offload_optimizer_device: cpu in the DeepSpeed config",
        ),
    ],
)
def test_offload_is_proposed_in_the_runs_own_terms(model_dir, launch, expect):
    got = fired(snapshot(n_gpus=1, model=H100), {"model_name_or_path": model_dir(QWEN25_7B), **FULL}, launch)
    fix = got["MEM101"][0].fix
    offload = [f for f in fix.split("; ") if "offload" in f]
    assert offload and offload[0].startswith(expect) and "GiB per node" in offload[0]
    if "deepspeed" not in launch:
        assert not any(f.startswith(("DeepSpeed with", "offload_optimizer_device")) for f in offload)


def test_plan_memory_prints_host_ram(write_json, model_dir, tmp_path):
    from tests.conftest import run_cli

    facts = str(write_json(snapshot(n_gpus=2), "facts.json"))
    out = run_cli(
        "plan-memory",
        "--facts",
        facts,
        "--model",
        model_dir(QWEN25_7B),
        "--",
        "accelerate",
        "launch",
        "--use_deepspeed",
        "--zero_stage",
        "2",
        "--offload_optimizer_device",
        "cpu",
        "--num_processes",
        "2",
        "train.py",
    )
    assert "GiB per node in host RAM" in out.stdout, out.stdout + out.stderr
