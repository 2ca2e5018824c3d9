"""PKG004's severity model (issue 13 items 4 and 5): errors only with evidence that the run fails."""

from __future__ import annotations

from tests.conftest import findings, snapshot

VLLM_026_REQUIRES = [
    "torch==2.11.0",
    "transformers>=5.5.3",
    "numba==0.65.0",
    "setuptools<81.0.0,>=77.0.3",
    "flashinfer-python==0.6.14",
    "tilelang==0.1.9",
]
STACK_026 = {
    "trl": "1.16.0",
    "transformers": "5.23.0",
    "torch": "2.11.0+cu130",
    "accelerate": "1.15.0",
    "numba": "0.68.0",
    "setuptools": "81.0.0",
    "tilelang": "0.1.9",
}


def _pkg004(packages: dict, python: str = "3.12.3") -> list:
    snap = snapshot(2, packages=packages, driver_cuda="13.0")
    snap["python"] = python
    return [f for f in findings(snap, config={"use_vllm": True}) if f.rule == "PKG004"]


def _by_target(found: list) -> dict[str, object]:
    return {f.evidence["requirement"].split("=")[0].split("<")[0]: f for f in found}


def test_vllm_026_on_the_measured_machine():
    """numba 0.68 / setuptools 81 were harmless there (warnings that say so); a missing
    flashinfer-python killed the engine at start (an error, with the env-var way out)."""
    vllm = {"version": "0.26.0", "requires": VLLM_026_REQUIRES}
    found = _by_target(_pkg004({**STACK_026, "vllm": vllm}))
    assert set(found) == {"numba", "setuptools", "flashinfer-python"}
    for name in ("numba", "setuptools"):
        assert found[name].severity.value == "warning"
        assert "harmless where measured" in found[name].message
    flash = found["flashinfer-python"]
    assert flash.severity.value == "error" and "not installed" in flash.message
    assert "sampler" in flash.message and "VLLM_USE_FLASHINFER_SAMPLER=0" in flash.fix


def test_unmeasured_pin_mismatch_is_a_warning_that_says_why():
    vllm = {"version": "0.26.0", "requires": ["lark==1.2.2"]}
    (hit,) = _pkg004({**STACK_026, "vllm": vllm, "lark": "1.3.0"})
    assert hit.severity.value == "warning" and "no compiled code of vllm binds lark" in hit.message


def test_a_torch_pin_of_compiled_code_is_an_error():
    vllm = {"version": "0.26.0", "requires": ["torch==2.11.0"]}
    (hit,) = _pkg004({**STACK_026, "vllm": vllm, "torch": "2.13.0+cu130"})
    assert hit.severity.value == "error" and "undefined symbol" in hit.message
    # issue 35: the alternative that keeps torch 2.13.0 is the vLLM built for it nearest to
    # 0.26.0 inside TRL 1.16's range (0.22.0-0.31.0), not the newest one (0.32.0, outside it)
    assert hit.fix == "pip install 'torch==2.11.0'  # or keep torch 2.13.0+cu130: pip install 'vllm==0.27.1'"


def test_flashinfer_on_another_vllm_is_not_claimed_fatal():
    vllm = {"version": "0.30.0", "requires": ["flashinfer-python==0.6.20"]}
    found = _pkg004({**STACK_026, "torch": "2.13.0+cu130", "vllm": vllm})
    assert all(f.severity.value == "warning" for f in found)


def test_markers_use_the_checked_pythons_version():
    vllm = {"version": "0.26.0", "requires": ['setuptools<81.0.0; python_version > "3.11"']}
    assert _pkg004({**STACK_026, "vllm": vllm}, python="3.12.3")
    assert not _pkg004({**STACK_026, "vllm": vllm}, python="3.11.9")


def test_snapshot_without_requires_dist_uses_the_curated_pins():
    """Item 5: vLLM 0.26.0 is built for torch 2.11.0 only; a snapshot without Requires-Dist
    must not pass with torch 2.13.0."""
    (hit,) = _pkg004({**STACK_026, "vllm": "0.26.0", "torch": "2.13.0+cu130"})
    assert hit.severity.value == "error" and "torch==2.11.0" in hit.message
    assert "curated pin" in hit.message and "'vllm==0.27.1'" in hit.fix
    assert not _pkg004({**STACK_026, "vllm": "0.26.0"})


def test_curated_pins_do_not_claim_missing_packages():
    assert not _pkg004({"trl": "1.16.0", "vllm": "0.26.0"})


def test_flashinfer_sampler_switched_off_is_not_an_error():
    vllm = {"version": "0.26.0", "requires": ["flashinfer-python==0.6.14"]}
    snap = snapshot(
        2, packages={**STACK_026, "vllm": vllm}, driver_cuda="13.0", env={"VLLM_USE_FLASHINFER_SAMPLER": "0"}
    )
    assert "PKG004" not in {f.rule for f in findings(snap, config={"use_vllm": True})}
    served = findings(
        snapshot(2, packages={**STACK_026, "vllm": vllm}, driver_cuda="13.0"),
        config={"use_vllm": True, "vllm_mode": "server"},
        launch="VLLM_USE_FLASHINFER_SAMPLER=0 CUDA_VISIBLE_DEVICES=1 trl vllm-serve "
        "--model m ; CUDA_VISIBLE_DEVICES=0 python train.py",
    )
    assert "PKG004" not in {f.rule for f in served}
