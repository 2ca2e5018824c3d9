"""Config rules beyond their fire / quiet scenarios."""

from __future__ import annotations

from tests.conftest import findings, snapshot


def test_cfg004_says_when_its_suggestion_belongs_to_another_trl_era():
    from tests.conftest import LEGACY, MODERN

    (modern,) = [f for f in findings(snapshot(1, packages=MODERN), config={"vllm_devic": "auto"})
                 if f.rule == "CFG004"]
    assert "`vllm_device`" in modern.message and "not of the installed TRL" in modern.message
    assert "replaced `vllm_device` with" in modern.fix
    (legacy,) = [f for f in findings(snapshot(1, packages=LEGACY), config={"vllm_devic": "auto"})
                 if f.rule == "CFG004"]
    assert "installed TRL" not in legacy.message and legacy.fix == "rename `vllm_devic` to `vllm_device`"
