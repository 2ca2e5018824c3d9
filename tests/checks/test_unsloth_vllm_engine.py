"""Unsloth's GRPOTrainer (2025.2.1 until 2026.5.9) sets ``self.llm = model.vllm_engine`` whenever
use_vllm is on; only ``FastLanguageModel.from_pretrained(..., fast_inference=True)`` builds that
engine (unslothai/unsloth unsloth/models/rl.py; the guard is unslothai/unsloth#4925, first in
2026.5.9). ``check`` reads the pairing from the script (catalogue entry
unsloth-use-vllm-without-fast-inference, ``when.facts: [vllm_in_process_off]``): an error naming
the loader call, fixed by the release that reads the engine only where it exists."""

from __future__ import annotations

import pytest

from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from tests.conftest import findings, snapshot

ENTRY = "unsloth-use-vllm-without-fast-inference"
TRL_015 = {
    "trl": "0.15.2",
    "vllm": "0.7.2",
    "torch": "2.5.1",
    "transformers": "4.49.0",
    "accelerate": "1.4.0",
}


def _stack(unsloth: str | None) -> dict:
    return {**TRL_015, **({"unsloth": unsloth, "unsloth-zoo": unsloth} if unsloth else {})}


SCRIPT = """\
from unsloth import FastLanguageModel, PatchFastRL
PatchFastRL("GRPO", FastLanguageModel)
from trl import GRPOConfig, GRPOTrainer

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name="Qwen/Qwen2.5-3B-Instruct", max_seq_length=1024, load_in_4bit=True,{kw}
)
args = GRPOConfig(output_dir="o", use_vllm={use_vllm}, num_generations=8, per_device_train_batch_size=8)
trainer = GRPOTrainer(model=model, args=args, reward_funcs=[], train_dataset=None)
trainer.train()
"""

FLAG = """\
import argparse
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer
p = argparse.ArgumentParser()
p.add_argument("--fast_inference", action="store_true")
args = p.parse_args()
model, tok = FastLanguageModel.from_pretrained("m", fast_inference=args.fast_inference)
trainer = GRPOTrainer(model=model, args=GRPOConfig(output_dir="o", use_vllm=True), reward_funcs=[])
"""

SFT = """\
from unsloth import FastLanguageModel
from trl import SFTConfig, SFTTrainer
model, tok = FastLanguageModel.from_pretrained("m")
trainer = SFTTrainer(model=model, args=SFTConfig(output_dir="o", use_vllm=True))
"""

PLAIN_TRL = """\
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer
model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
trainer = GRPOTrainer(model=model, args=GRPOConfig(output_dir="o", use_vllm=True), reward_funcs=[])
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _knf(unsloth: str | None, launch: str = "python train.py") -> list:
    found = findings(snapshot(1, packages=_stack(unsloth)), launch=launch)
    return [f for f in found if f.evidence.get("id") == ENTRY]


@pytest.mark.parametrize("kw", ["", " fast_inference=False,"])
def test_use_vllm_with_the_loader_leaving_vllm_off_is_an_error_naming_the_call(here, kw):
    (here / "train.py").write_text(SCRIPT.format(kw=kw, use_vllm=True))
    (found,) = _knf("2025.3.19")
    assert found.rule == "KNF001" and found.severity.value == "error"
    assert "FastLanguageModel.from_pretrained(" in found.message and "train.py:5" in found.message
    assert found.remedy is not None and found.remedy.packages == {"unsloth": "2026.5.9"}
    # forward only: below 2025.2.1 Unsloth has no GRPOTrainer for the script to patch in
    assert found.fix.startswith("pip install 'unsloth==2026.5.9'")
    assert "fast_inference=True" in found.fix and "use_vllm=False" in found.fix


def test_an_argparse_flag_defaulting_to_false_counts_and_the_command_line_decides(here):
    (here / "train.py").write_text(FLAG)
    assert [f.severity.value for f in _knf("2025.3.19")] == ["error"]
    assert _knf("2025.3.19", "python train.py --fast_inference") == []


@pytest.mark.parametrize(
    ("kw", "use_vllm", "unsloth"),
    [
        (" fast_inference=True, max_lora_rank=32,", True, "2025.3.19"),  # the engine is built
        ("", False, "2025.3.19"),  # TRL's vLLM never asked for
        ("", True, "2026.9.1"),  # the release reads the engine only where the model has one
        ("", True, "2025.1.10"),  # before Unsloth's GRPOTrainer
        (" fast_inference=FAST,", True, "2025.3.19"),  # a value envdoctor does not evaluate
        (" **load_kwargs,", True, "2025.3.19"),  # a mapping that may pass it
    ],
)
def test_quiet(here, kw, use_vllm, unsloth):
    (here / "train.py").write_text(SCRIPT.format(kw=kw, use_vllm=use_vllm))
    assert _knf(unsloth) == []


def test_quiet_without_unsloth_and_on_an_sft_stage(here):
    (here / "train.py").write_text(PLAIN_TRL)
    assert _knf(None) == [] and _knf("2025.3.19") == []
    (here / "train.py").write_text(SFT)
    assert _knf("2025.3.19") == []


def test_unsloth_release_not_known_is_a_warning_saying_so(here):
    (here / "train.py").write_text(SCRIPT.format(kw="", use_vllm=True))
    (found,) = _knf(None)
    assert found.severity.value == "warning"
    assert "which unsloth release runs is not known" in found.message
    assert "unsloth >=2025.2.1,<2026.5.9" in found.message


def test_the_pin_closes_it(here):
    (here / "train.py").write_text(SCRIPT.format(kw="", use_vllm=True))
    facts = from_dict(snapshot(1, packages=_stack("2025.3.19")), "snap")
    plan = build_plan(launch="python train.py", config_dict=None, live=False)
    closure = close(facts, plan, Rerun())
    assert closure.changes.packages.get("unsloth") == "2026.5.9"
    assert not any(f.evidence.get("id") == ENTRY for f in closure.after)
    loud = lambda fs: {(f.rule, f.evidence.get("id")) for f in fs if f.severity.value != "info"}  # noqa: E731
    assert loud(closure.after) <= loud(closure.before)


@pytest.mark.parametrize(("declared", "fires"), [(">=2025.3", True), (">=2026.6", False), (">2026.5", True)])
def test_a_declared_range_without_an_exact_release(here, declared, fires):
    from types import SimpleNamespace

    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules

    (here / "train.py").write_text(SCRIPT.format(kw="", use_vllm=True))
    facts = from_dict(snapshot(1, packages=_stack(None)), "snap")
    facts.extra["declared"] = {"stack": {"unsloth": SimpleNamespace(spec=declared, version=None)}}
    plan = build_plan(launch="python train.py", config_dict=None, live=False)
    found = [f for f in run_rules(Context(facts=facts, plan=plan)).findings if f.evidence.get("id") == ENTRY]
    assert [f.severity.value for f in found] == (["warning"] if fires else [])
    assert all(f"declared as unsloth{declared}, no exact release" in f.message for f in found)
