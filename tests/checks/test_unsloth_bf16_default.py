"""GPU004 under Unsloth: Unsloth's patched config defaults bf16 and fp16 to False (2025.6.6 on) and
its trainer picks the precision from the model's dtype, so a script that leaves bf16 unset does not
ask for bf16 on a T4 / V100 (four Unsloth GRPO notebooks run on a Colab T4 were GPU004 errors,
dev set heldout-2026-11-28c/d). bf16 written by the script, or an Unsloth before those defaults,
still fires."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from tests.conftest import MODERN, V100, snapshot

SCRIPT = (
    "from unsloth import FastLanguageModel\n"
    "from trl import GRPOConfig, GRPOTrainer\n"
    "args = GRPOConfig({kw}per_device_train_batch_size=4, num_generations=4)\n"
    "GRPOTrainer(model=m, reward_funcs=[len], args=args)\n"
)


def _gpu004(tmp_path: Path, kw: str, unsloth: str | None) -> bool:
    (tmp_path / "train.py").write_text(SCRIPT.format(kw=kw))
    packages = {**MODERN, "trl": "0.22.2"} | ({"unsloth": unsloth} if unsloth else {})
    facts = from_dict(snapshot(1, model=V100, packages=packages), "test")
    plan = build_plan(launch=f"python {tmp_path / 'train.py'}", live=False)
    return "GPU004" in {f.rule for f in run_rules(Context(facts=facts, plan=plan)).findings}


@pytest.mark.parametrize(
    ("kw", "unsloth", "fires"),
    [
        ("", "2025.9.1", False),  # Unsloth's default: off; the trainer picks from the model's dtype
        ("", "0+unknown", False),  # installed, release not recorded: the defaults of the releases since
        ("", "2025.3.1", True),  # before Unsloth's defaults: TRL's bf16 default holds
        ("bf16=True, ", "2025.9.1", True),  # written by the script: asked for
    ],
)
def test_unsloth_bf16_default(tmp_path: Path, kw: str, unsloth: str | None, fires: bool) -> None:
    assert _gpu004(tmp_path, kw, unsloth) is fires


def test_bf16_asked_under_unsloth_is_refused_whatever_torch(tmp_path: Path) -> None:
    """Unsloth answers torch.cuda.is_bf16_supported() with including_emulation=False: on a T4 /
    V100 TrainingArguments refuses bf16 even with a torch that would emulate it (two broken dev
    setups, EmailTriageEnv and METAHackthon2026, set bf16=True under Unsloth on a Colab T4)."""
    (tmp_path / "train.py").write_text(SCRIPT.format(kw="bf16=True, "))
    facts = from_dict(snapshot(1, model=V100, packages={**MODERN, "unsloth": "2026.4.8"}), "test")
    plan = build_plan(launch=f"python {tmp_path / 'train.py'}", live=False)
    found = {f.rule: f for f in run_rules(Context(facts=facts, plan=plan)).findings}
    assert found["GPU004"].severity.value == "error" and "Unsloth" in found["GPU004"].message


def test_without_unsloth_trl_default_holds(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        SCRIPT.format(kw="").replace("from unsloth import FastLanguageModel\n", "")
    )
    facts = from_dict(snapshot(1, model=V100, packages={**MODERN, "trl": "0.22.2"}), "test")
    plan = build_plan(launch=f"python {tmp_path / 'train.py'}", live=False)
    assert "GPU004" in {f.rule for f in run_rules(Context(facts=facts, plan=plan)).findings}


@pytest.mark.parametrize(
    "kw",
    [
        "bf16=is_bf16_supported(), fp16=not is_bf16_supported(), ",  # Unsloth's notebooks' idiom
        "fp16=not torch.cuda.is_bf16_supported(), ",  # bf16 left to TRL's `not fp16` default
    ],
)
def test_precision_computed_in_the_script_is_not_trls_default(tmp_path: Path, kw: str) -> None:
    """A precision the script computes (held-out set 19's WRAITH, 750 steps on a Kaggle T4:
    `bf16=torch.cuda.is_bf16_supported()`) has no value envdoctor knows: neither bf16=True nor
    TRL's default, so GPU004 says nothing (it said "bf16 is on ... value unknown" as an error)."""
    assert _gpu004(tmp_path, kw, None) is False
    assert _gpu004(tmp_path, kw, "2026.4.8") is False
