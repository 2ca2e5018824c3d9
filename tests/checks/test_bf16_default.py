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


def test_torch_from_2_3_emulates_bf16_so_it_is_advice():
    """From torch 2.3 torch.cuda.is_bf16_supported() answers True on a T4 / V100 (a bf16 tensor can
    be made there), so TrainingArguments accepts bf16: slower than fp16, not a refusal (a TRL
    notebook run on a Colab T4 with TRL's default bf16, dev set heldout-2026-11-28b, was an error)."""
    for torch, severity in (("2.2.2", "error"), ("2.3.0", "info"), ("2.9.0+cu128", "info")):
        snap = snapshot(1, V100, packages={**MODERN, "torch": torch})
        found = [
            f for f in findings(snap, config={"bf16": True}, launch="python train.py") if f.rule == "GPU004"
        ]
        assert len(found) == 1 and found[0].severity.value == severity, (torch, found)
        assert ("refuses" in found[0].message) is (severity == "error")
