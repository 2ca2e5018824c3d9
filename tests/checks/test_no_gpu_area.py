"""No GPU is not "checked and fine": the GPUs area is never a green tick without a GPU
(issue #27, item 9), the same in text and JSON."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli, snapshot


@pytest.fixture
def no_gpu(write_json):
    snap = snapshot(n_gpus=0)
    snap["nvml_error"] = "NVML library libnvidia-ml.so.1 not found: no NVIDIA driver installed"
    return str(write_json(snap, "nogpu.json"))


def _gpus_line(text: str) -> str:
    return next(line for line in text.splitlines() if " GPUs " in line)


def test_no_gpu_is_not_checked_in_text_and_json(no_gpu):
    text = run_cli("check", "--facts", no_gpu).stdout
    line = _gpus_line(text)
    assert line.startswith("[-] GPUs") and "no NVIDIA driver" in line and "not checked" in line
    data = json.loads(run_cli("check", "--facts", no_gpu, "--format", "json").stdout)
    (area,) = [a for a in data["areas"] if a["key"] == "gpus"]
    assert area["status"] == "skipped" and area["note"] == "not checked"


def test_no_gpu_for_a_run_is_a_warning(no_gpu):
    out = run_cli("check", "--facts", no_gpu, "--", "torchrun", "--nproc_per_node", "2", "train.py")
    assert _gpus_line(out.stdout).startswith("[!] GPUs")


def test_gpus_present_still_tick(write_json):
    out = run_cli("check", "--facts", str(write_json(snapshot(n_gpus=2))))
    assert _gpus_line(out.stdout).startswith("[✓] GPUs")
