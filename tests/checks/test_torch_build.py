"""GPU008: a torch without CUDA on a machine with NVIDIA GPUs (issue #27, item 5)."""

from __future__ import annotations

import pytest

from envdoctor.checks.gpus import non_cuda_build
from tests.conftest import A100_40, LEGACY, findings, snapshot


def _gpu008(torch: str | None, n_gpus: int = 2) -> list:
    packages = {**LEGACY, "torch": torch} if torch else {k: v for k, v in LEGACY.items() if k != "torch"}
    snap = snapshot(n_gpus=n_gpus, model=A100_40, packages=packages)
    return findings(
        snap,
        config={"use_vllm": True, "vllm_device": "auto"},
        launch="torchrun --nproc_per_node 1 train.py",
        select=["GPU008"],
    )


@pytest.mark.parametrize(
    "torch", ["2.5.1+cpu", "2.5.1+CPU", "2.5.1+rocm6.2", "2.5.1+xpu", "2.6.0+cpu.cxx11.abi"]
)
def test_a_torch_without_cuda_on_nvidia_gpus_is_an_error(torch):
    (found,) = _gpu008(torch)
    assert found.severity.value == "error"
    assert f"torch {torch}" in found.message and "2 NVIDIA GPUs" in found.message
    assert "torch==2.5.1" in found.fix or "torch==2.6.0" in found.fix


@pytest.mark.parametrize("torch", ["2.5.1+cu124", "2.5.1", "2.6.0a0+git1234abc", None])
def test_cuda_builds_plain_pypi_versions_and_no_torch_stay_quiet(torch):
    assert _gpu008(torch) == []


def test_quiet_without_gpus():
    assert _gpu008("2.5.1+cpu", n_gpus=0) == []


def test_the_seed_report_with_a_cpu_torch_is_not_healthy():
    """Issue #27: two A100s and torch 2.5.1+cpu were reported as "No issues found"."""
    snap = snapshot(n_gpus=2, model=A100_40, packages={**LEGACY, "torch": "2.5.1+cpu"})
    found = findings(
        snap, config={"use_vllm": True, "vllm_device": "auto"}, launch="torchrun --nproc_per_node 1 train.py"
    )
    assert any(f.severity.value == "error" for f in found)


def test_labels():
    assert non_cuda_build("2.5.1+cu124") is None
    assert non_cuda_build("not a version") is None
    assert non_cuda_build("2.5.1+cpu") == "a CPU-only build"
