"""`envdoctor fix`'s pip line on an accelerator other than CUDA: PyPI's CUDA wheels are not pinned."""

from __future__ import annotations

from envdoctor.commands.fix import commands
from envdoctor.facts.snapshot import from_dict
from envdoctor.remedy.platform import accelerator_build
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


def _proved(packages: dict) -> list:
    from envdoctor.plan.build import build_plan
    from envdoctor.remedy import Rerun
    from envdoctor.remedy.closure import prove

    facts = _facts(packages=packages)
    plan = build_plan(config_dict={"use_vllm": True}, live=False)
    rerun = Rerun()
    return [f for f in prove(facts, plan, rerun(facts, plan), rerun) if f.rule == "PKG006"]


def test_checks_proved_pip_line_on_rocm_names_vllm_for_rocms_builds():
    """PKG006 (TRL 0.24 outside its vLLM range): on CUDA check prints the pip pin; on ROCm the
    same proved remedy is told as ROCm's build of that vLLM release, never PyPI's CUDA wheel."""
    cuda = _proved({**MODERN, "trl": "0.24.0", "vllm": "0.11.0"})
    rocm = _proved({**MODERN, "trl": "0.24.0", "vllm": "0.11.0", "torch": "2.13.0+rocm6.4"})
    assert cuda and rocm and cuda[0].remedy is not None and rocm[0].remedy is not None
    # the plan (TRL up to one whose range holds vLLM 0.11, with the torch that vLLM pins; the model's
    # transformers kept where the model is not known) pins a CUDA-built package and a pure-Python one
    pins = cuda[0].remedy.packages
    built = [n for n in pins if n in ("torch", "vllm")]
    pure = [n for n in pins if n not in built]
    assert built and pure
    assert cuda[0].fix.startswith("pip install ") and all(f"'{n}==" in cuda[0].fix for n in pins)
    assert rocm[0].remedy.packages == pins  # the same releases, only said otherwise
    assert "install the ROCm builds" in rocm[0].fix
    for n in built:  # named for ROCm's own builds, never a PyPI (CUDA) pin
        assert f"{n}=={pins[n]}" in rocm[0].fix and f"'{n}==" not in rocm[0].fix
    for n in pure:  # PyPI's wheel is the same everywhere
        assert f"'{n}=={pins[n]}'" in rocm[0].fix


def test_a_text_that_is_not_only_a_pip_line_keeps_its_words_and_names_the_platform_build():
    from envdoctor.remedy.platform import on_platform

    text = "pip install 'vllm==0.10.2'; and remove `vllm_device`"
    told = on_platform(text, {"vllm": "0.10.2"}, "ROCm")
    assert told.startswith(text) and "vllm==0.10.2 from the ROCm builds" in told
    assert on_platform(text, {"vllm": "0.10.2"}, None) == text
    assert on_platform("pip install 'trl==0.24.0'", {"trl": "0.24.0"}, "ROCm") == "pip install 'trl==0.24.0'"
