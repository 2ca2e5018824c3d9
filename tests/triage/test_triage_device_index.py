"""A GPU index beyond the GPUs a process sees: CUDA's invalid device ordinal, torch's num_gpus check."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes

ENTRY = "cuda-device-index-beyond-visible"


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: CUDA error: invalid device ordinal\n",
        "[rank3]: torch.AcceleratorError: CUDA error: invalid device ordinal\n",
        (
            "Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 527, '
            "in get_device_properties\n"
            "    return _get_device_properties(device)\n"
            'RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/src/ATen/cuda/'
            'CUDAContext.cpp":49, please report a bug to PyTorch. device=7, num_gpus=4\n'
        ),
    ],
)
def test_an_index_beyond_the_visible_gpus_is_an_error_with_the_layout_fix(log):
    found = findings(scan_bytes(log))
    assert found and found[0].rule == "TRI011" and found[0].severity.value == "error"
    assert ENTRY in found[0].message
    assert "--nproc_per_node" in found[0].fix and "vllm_device" in found[0].fix


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: CUDA error: an illegal memory access was encountered\n",
        "RuntimeError: CUDA error: invalid device function\n",
        "RuntimeError: No CUDA GPUs are available\n",
    ],
)
def test_other_cuda_errors_are_not_an_index_beyond_the_visible_gpus(log):
    assert all(ENTRY not in f.message for f in findings(scan_bytes(log)))


def test_check_leaves_the_layout_to_its_rule():
    """KNF001 does not report the entry: LAY004 / LAY001 judge the layout in check."""
    from envdoctor.knowledge.catalogue import load_checkable_failures

    assert all(e.id != ENTRY for e in load_checkable_failures())
