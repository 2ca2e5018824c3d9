"""The probe on real GPUs (device tool; skipped without a GPU). See docs/validation/."""

from __future__ import annotations

import os
import sys

import pytest

from envdoctor.facts.gpus import collect_gpus
from envdoctor.probe.run.runner import ProbeSpec, run_probe

pytestmark = pytest.mark.gpu


def _gpus(n: int):
    facts = collect_gpus()
    if len(facts.gpus) < n:
        pytest.skip(f"needs {n} GPUs ({facts.error or len(facts.gpus)})")
    return facts.gpus


def test_one_rank_on_gpu0_proves_isolation():
    gpus = _gpus(2)
    spec = ProbeSpec(
        launcher=[sys.executable],
        env={"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
        rank_gpus={0: 0},
        generation_gpus=[1],
        gpu_uuids={g.index: g.uuid for g in gpus},
    )
    r = run_probe(spec)
    assert r.status == "pass", (r.findings, r.log_tail)
    assert r.isolation == "proved" and set(r.peak_mib) == {0}
    assert r.ranks[0]["device"] == "cuda:0" and r.ranks[0]["uuid"] == gpus[0].uuid


def test_both_gpus_visible_to_one_process_is_caught():
    _gpus(2)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    spec = ProbeSpec(
        launcher=[sys.executable],
        env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
        rank_gpus={0: 0},
        generation_gpus=[1],
    )
    os.environ.clear()
    os.environ.update(env)
    r = run_probe(spec)
    assert r.status == "fail"
    assert {"PRB002", "LAY003"} & {f.rule for f in r.findings}  # a silent wrap, or TRL's refusal


def test_one_gpu_step_then_a_real_oom_leave_nothing_behind():
    from dataclasses import replace

    gpus = _gpus(1)
    spec = ProbeSpec(
        launcher=[sys.executable],
        env={"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
        rank_gpus={0: 0},
        gpu_uuids={g.index: g.uuid for g in gpus},
    )
    r = run_probe(spec)
    assert r.status == "pass", (r.findings, r.log_tail)
    rank = r.ranks[0]
    assert rank["param_devices"] == rank["grad_devices"] == ["cuda:0"]
    assert rank["optimizer_state_devices"] == ["cuda:0"] and rank["peak_allocated_mib"] > 0
    assert r.isolation == "proved" and r.peak_mib.get(0, 0) > 0 and r.leftover_gpu == []
    r = run_probe(replace(spec, fault="oom", fault_at="trainer_init"))
    assert r.status == "fail", (r.findings, r.log_tail)
    oom = next(f for f in r.findings if f.rule == "PRB007")
    assert oom.evidence["gpu"] == "0" and oom.evidence["want"] == "1048576.00 GiB"  # 1 PiB
    assert r.leftover_pids == [] and r.leftover_gpu == [] and r.temp_dir_removed


def _vllm() -> None:
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed")


def test_colocate_generates_through_vllm_and_leaves_nothing():
    """As measured on one H100 (docs/validation/probe-vllm-h100.md)."""
    _vllm()
    _gpus(1)
    spec = ProbeSpec(
        launcher=[sys.executable],
        env={"CUDA_VISIBLE_DEVICES": "0"},
        rank_gpus={0: 0},
        use_vllm=True,
        vllm_mode="colocate",
        vllm={"vllm_gpu_memory_utilization": 0.3, "vllm_max_model_length": 256},
        trainer_visible=[0],
        per_device_train_batch_size=4,
        num_generations=4,
        timeout_s=300,
    )
    r = run_probe(spec)
    assert r.status == "pass", (r.findings, r.log_tail)
    assert r.ranks[0]["sync_calls"] >= 1 and r.ranks[0]["vllm_generate_calls"] >= 1
    assert r.leftover_pids == [] and r.leftover_gpu == []


def test_server_split_syncs_weights_over_nccl():
    """The healthy split: trainer on GPU 0, probe server on GPU 1 (needs two GPUs)."""
    from envdoctor.plan.launch import parse_launch

    _vllm()
    _gpus(2)
    server = parse_launch("CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m --gpu_memory_utilization 0.3")
    spec = ProbeSpec(
        launcher=[sys.executable],
        env={"CUDA_VISIBLE_DEVICES": "0"},
        rank_gpus={0: 0},
        generation_gpus=[1],
        use_vllm=True,
        vllm_mode="server",
        server_launch=server,
        server_visible=[1],
        trainer_visible=[0],
        per_device_train_batch_size=4,
        num_generations=4,
        timeout_s=300,
    )
    r = run_probe(spec)
    assert r.status == "pass", (r.findings, r.server.get("log_tail"), r.log_tail)
    assert r.ranks[0]["sync_calls"] >= 1 and set(r.server["peak_mib"]) == {1}
    assert r.isolation == "proved" and r.leftover_pids == [] and r.leftover_gpu == []
