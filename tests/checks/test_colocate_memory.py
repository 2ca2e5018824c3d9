"""MEM001 on colocate GPUs: each training rank's vLLM checks, at start, that the GPU's free memory
covers vllm_gpu_memory_utilization × total (vLLM's "Free memory on device … is less than desired
GPU memory utilization"), so a stranger holding the GPU stops the run before its first step."""

from __future__ import annotations

from tests.conftest import findings, snapshot

H100 = {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "compute_capability": "9.0"}
STACK = {
    "trl": "1.16.0",
    "transformers": "5.23.0",
    "torch": "2.11.0+cu130",
    "accelerate": "1.15.0",
    "vllm": "0.26.0",
}
COLOCATE = {"use_vllm": True, "vllm_mode": "colocate"}
STRANGER = {"pid": 4242, "name": "python other_job.py", "used_mib": 61440}
LAUNCH = "torchrun --nproc_per_node 2 train.py"


def _rules(used: int, config: dict) -> dict:
    snap = snapshot(
        2,
        model=H100,
        packages=STACK,
        driver_cuda="13.0",
        used={1: used},
        processes={1: [STRANGER] if used else []},
    )
    return {f.rule: f for f in findings(snap, config=config, launch=LAUNCH)}


def test_stranger_below_the_colocate_reservation_is_an_error():
    found = _rules(61440, COLOCATE)  # ~19.6 GiB free < 0.3 × 79.6 GiB (TRL's default)
    assert found["MEM001"].severity.value == "error"
    assert "GPU 1 (training and colocated vLLM)" in found["MEM001"].message
    assert "0.3 × 81559" in found["MEM001"].message and "pid 4242" in found["MEM001"].message
    assert "lower vllm_gpu_memory_utilization to 0.22" in found["MEM001"].fix
    assert "MEM003" not in found  # one finding for one cause


def test_room_for_the_reservation_is_quiet():
    assert "MEM001" not in _rules(0, COLOCATE)
    assert "MEM001" not in _rules(61440, {**COLOCATE, "vllm_gpu_memory_utilization": 0.2})
