"""Config rules beyond their fire / quiet scenarios."""

from __future__ import annotations

from tests.conftest import findings, snapshot


def test_cfg004_says_when_its_suggestion_belongs_to_another_trl_era():
    from tests.conftest import LEGACY, MODERN

    (modern,) = [
        f for f in findings(snapshot(1, packages=MODERN), config={"vllm_devic": "auto"}) if f.rule == "CFG004"
    ]
    assert "`vllm_device`" in modern.message and "not of the installed TRL" in modern.message
    assert "replaced `vllm_device` with" in modern.fix
    (legacy,) = [
        f for f in findings(snapshot(1, packages=LEGACY), config={"vllm_devic": "auto"}) if f.rule == "CFG004"
    ]
    assert "installed TRL" not in legacy.message and legacy.fix == "rename `vllm_devic` to `vllm_device`"


def _cfg001(trl: str, config: dict) -> list:
    from tests.conftest import MODERN

    return [
        f for f in findings(snapshot(1, packages={**MODERN, "trl": trl}), config=config) if f.rule == "CFG001"
    ]


def test_cfg001_vllm_gpu_memory_utilization_is_live_again_from_trl_018():
    """Issue 13 item 2: deprecated (and ignored) only in TRL 0.16-0.17; TRL 0.18 made it the
    colocate knob, so TRL 1.16 with vllm_mode colocate must not hear 'deprecated'."""
    cfg = {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3}
    assert _cfg001("1.16.0", cfg) == []
    assert _cfg001("0.18.0", cfg) == []
    (old,) = _cfg001("0.16.1", {"use_vllm": True, "vllm_gpu_memory_utilization": 0.3})
    assert "deprecated in TRL 0.16.1" in old.message and old.severity.value == "warning"


def test_cfg001_deprecated_key_names_trls_replacement():
    (hit,) = _cfg001("1.16.0", {"use_transformers_paged": True})
    assert "deprecated" in hit.message and "use_transformers_continuous_batching" in hit.fix
