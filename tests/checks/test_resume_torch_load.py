"""PKG015: a resume on a transformers whose Trainer cannot load the checkpoint's state under
torch < 2.6 (kirang89/ocamler-grpo bec5f99, held-out set 22: trainer.train(resume_from_checkpoint=
get_last_checkpoint(...)) with transformers 4.57.3 and torch 2.5.1 failed on restart; huggingface/
trl#3247: transformers 4.51 + torch 2.5 failed at the RNG state)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import findings, run_cli, snapshot

STACK = {
    "trl": "0.25.1",
    "transformers": "4.57.3",
    "torch": "2.5.1+cu121",
    "accelerate": "1.12.0",
    "peft": "0.18.0",
}

SCRIPT = """\
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOConfig, GRPOTrainer

{body}
trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B-Instruct", reward_funcs=[len], args=GRPOConfig(output_dir="o"))
trainer.train({call})
"""


def _pkg015(tmp_path: Path, monkeypatch, call: str, body: str = "", config: dict | None = None, **pk) -> list:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT.format(body=body, call=call))
    snap = snapshot(1, packages={**STACK, **pk})
    return [f for f in findings(snap, config=config or {}, launch="python train.py") if f.rule == "PKG015"]


def test_a_literal_resume_is_an_error_naming_the_check(tmp_path, monkeypatch):
    (f,) = _pkg015(tmp_path, monkeypatch, "resume_from_checkpoint=True")
    assert f.severity.value == "error"
    assert "train.py:6" in f.message and "transformers 4.57.3 with torch 2.5.1+cu121" in f.message
    assert "check_torch_load_is_safe()" in f.message and "CVE-2025-32434" in f.message
    assert "'torch==" in f.fix


def test_a_resume_only_when_a_checkpoint_exists_is_a_warning(tmp_path, monkeypatch):
    body = 'last = get_last_checkpoint("o")'
    (f,) = _pkg015(tmp_path, monkeypatch, "resume_from_checkpoint=last", body=body)
    assert f.severity.value == "warning" and "a restart that finds one" in f.message
    assert "its restart fails" in f.message


def test_the_configs_key_counts_where_the_script_hands_it_on(tmp_path, monkeypatch):
    call = "resume_from_checkpoint=training_args.resume_from_checkpoint"
    assert _pkg015(tmp_path, monkeypatch, call) == []
    (f,) = _pkg015(tmp_path, monkeypatch, call, config={"resume_from_checkpoint": "o/checkpoint-100"})
    assert f.severity.value == "error" and "o/checkpoint-100" in f.message


def test_the_rng_state_failure_of_transformers_4_51(tmp_path, monkeypatch):
    (f,) = _pkg015(tmp_path, monkeypatch, "True", transformers="4.51.3", trl="0.16.0")
    assert "UnpicklingError" in f.message and "_load_rng_state" in f.message


@pytest.mark.parametrize(
    ("call", "config", "packages"),
    [
        ("resume_from_checkpoint=True", {}, {"torch": "2.6.0"}),
        ("resume_from_checkpoint=True", {}, {"transformers": "4.50.3", "trl": "0.16.0"}),  # no check yet
        ("resume_from_checkpoint=True", {}, {"transformers": "4.51.3", "torch": "2.6.0"}),
        (
            "resume_from_checkpoint=True",
            {},
            {"transformers": "5.20.0"},
        ),  # torch < 2.6 disabled: not this rule's
        ("resume_from_checkpoint=True", {}, {"transformers": "5.10.0", "torch": "2.4.1"}),
        ("", {}, {}),  # no resume
        ("resume_from_checkpoint=None", {}, {}),
        ("resume_from_checkpoint=False", {}, {}),
        ("resume_from_checkpoint=True", {"save_only_model": True}, {}),  # no optimizer state to load
    ],
)
def test_quiet(tmp_path, monkeypatch, call, config, packages):
    assert _pkg015(tmp_path, monkeypatch, call, config=config, **packages) == []


def test_save_only_model_does_not_escape_the_rng_state_check_of_5x(tmp_path, monkeypatch):
    (f,) = _pkg015(tmp_path, monkeypatch, "True", config={"save_only_model": True}, transformers="5.10.0")
    assert "_load_rng_state" in f.message


def test_config_only_is_a_warning_and_trls_own_script_never_resumes():
    snap = snapshot(1, packages=STACK)
    cfg = {"resume_from_checkpoint": "out/checkpoint-5"}
    (f,) = [f for f in findings(snap, config=cfg) if f.rule == "PKG015"]
    assert f.severity.value == "warning" and "if the training script hands it" in f.message
    assert [
        f for f in findings(snap, config=cfg, launch="trl grpo --config c.yaml") if f.rule == "PKG015"
    ] == []


def test_fix_pins_torch_through_the_resolver_and_the_check_after_is_clean(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT.format(body="", call="resume_from_checkpoint=True"))
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, packages=STACK)))
    out = run_cli(
        "fix", "--format", "json", "--facts", "facts.json", "--", "python", "train.py", cwd=tmp_path
    )
    data = json.loads(out.stdout)
    assert "PKG015" in data["fixed"]
    torch = data["changes"]["packages"]["torch"]
    assert tuple(int(x) for x in torch.split(".")[:2]) >= (2, 6)
    assert not any(f["rule"] == "PKG015" for f in data["after"]["findings"])
