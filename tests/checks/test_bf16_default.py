"""GPU004 follows GRPOConfig's own bf16 default (``not fp16`` from TRL 0.19, trl.yaml
bf16_default_true): a config that asks for fp16 on a GPU without bf16 is no bf16 run."""

from __future__ import annotations

from tests.conftest import MODERN, V100, findings, snapshot


def _gpu004(config: dict) -> list:
    snap = snapshot(1, V100, packages={**MODERN, "trl": "1.16.0"})
    return [f for f in findings(snap, config=config, launch="python train.py") if f.rule == "GPU004"]


def test_fp16_asked_turns_the_default_bf16_off():
    assert _gpu004({"fp16": True, "num_generations": 4}) == []


def test_the_default_bf16_on_a_gpu_without_it_is_still_named():
    found = _gpu004({"num_generations": 4})
    assert len(found) == 1 and "TRL 1.16.0's default" in found[0].message


def test_bf16_asked_with_fp16_too_is_bf16():
    assert len(_gpu004({"bf16": True, "fp16": True})) == 1
