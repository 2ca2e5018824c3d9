"""GPU facts on a real GPU (run through the device tool; skipped without a GPU)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from envdoctor.facts.gpus import collect_gpus

pytestmark = pytest.mark.gpu


def _gpus():
    facts = collect_gpus()
    if not facts.gpus:
        pytest.skip(f"no GPU: {facts.error}")
    return facts


def test_nvml_facts_are_sane():
    facts = _gpus()
    assert facts.driver.version and facts.driver.cuda
    for g in facts.gpus:
        assert g.uuid.startswith(("GPU-", "MIG-")) and g.name
        assert g.memory_total_mib > 1024
        assert 0 <= g.memory_used_mib <= g.memory_total_mib
        assert abs(g.memory_used_mib + g.memory_free_mib - g.memory_total_mib) < 1024
        assert g.compute_capability and g.cc_major >= 3


def test_a_process_holding_memory_is_seen_with_pid_and_mib():
    facts = _gpus()
    target = facts.gpus[-1].index
    code = (
        "import torch, time\n"
        "x = torch.empty(1024 * 1024 * 1024, dtype=torch.uint8, device='cuda:0')\n"
        "print('ready', flush=True)\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={
            **__import__("os").environ,
            "CUDA_VISIBLE_DEVICES": str(target),
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        },
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        gpu = next(g for g in collect_gpus().gpus if g.index == target)
        mine = [p for p in gpu.processes if p.pid == proc.pid]
        assert mine, gpu.processes
        assert mine[0].used_mib is None or mine[0].used_mib >= 1024
        assert "python" in mine[0].name
    finally:
        proc.kill()
        proc.wait()
