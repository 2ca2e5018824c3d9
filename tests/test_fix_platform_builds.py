"""`envdoctor fix`'s pip line on an accelerator other than CUDA: PyPI's CUDA wheels are not pinned."""

from __future__ import annotations

from envdoctor.commands.fix import accelerator_build, commands
from envdoctor.facts.snapshot import from_dict
from tests.conftest import MODERN, snapshot

CHANGES = {
    "packages": {"torch": "2.8.0", "vllm": "0.10.2", "trl": "0.24.0", "transformers": "4.56.2"},
    "env": {"set": {}, "unset": []},
    "launch": None,
}


def _facts(**kw):
    return from_dict(snapshot(**kw), "test")


def test_on_rocm_the_cuda_built_packages_are_named_for_rocms_builds_not_pinned_from_pypi():
    facts = _facts(packages={**MODERN, "torch": "2.8.0+rocm6.4"})
    assert accelerator_build(facts) == "ROCm"
    pip, note = commands(CHANGES, accelerator_build(facts))
    assert pip == "pip install transformers==4.56.2 trl==0.24.0"
    assert note.startswith("# torch==2.8.0 vllm==0.10.2: install the ROCm builds")


def test_an_amd_gpu_is_rocm_and_an_ascend_stack_is_its_own():
    amd = {"name": "AMD Instinct MI300X", "memory_total_mib": 196608, "compute_capability": "9.4"}
    assert accelerator_build(_facts(n_gpus=1, model=amd)) == "ROCm"
    npu = _facts(packages={**MODERN, "torch-npu": "2.1.0.post3"})
    assert accelerator_build(npu) == "Ascend NPU"


def test_on_cuda_the_pip_line_pins_every_package():
    facts = _facts(packages={**MODERN, "torch": "2.8.0"})
    assert accelerator_build(facts) is None
    (pip,) = commands(CHANGES, accelerator_build(facts))
    assert pip == "pip install torch==2.8.0 transformers==4.56.2 trl==0.24.0 vllm==0.10.2"
