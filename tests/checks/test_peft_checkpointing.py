"""CFG012: a PEFT adapter with reentrant gradient checkpointing on TRL 0.14-0.15's GRPOTrainer
(vishal1383/continual-grpo eb565ef, held-out set 22: GRPOConfig(gradient_checkpointing=True) built
in code, GRPOTrainer(peft_config=LoraConfig(...)) on TRL 0.15.2 + transformers 4.50.3; the first
backward failed; check said nothing). Reproduced on the CPU:
docs/validation/cpu-repro-2026-11-30-gradckpt-peft."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LEGACY, findings, run_cli, snapshot

STACK = {**LEGACY, "transformers": "4.50.3", "peft": "0.15.1", "vllm": None}

SCRIPT = """\
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer

args = GRPOConfig(
    output_dir="out",
    gradient_checkpointing=True,
    logging_steps=1,
)
{peft}
trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B-Instruct", reward_funcs=[len], args=args, peft_config=peft)
{after}trainer.train()
"""
LORA = 'peft = LoraConfig(r=8, target_modules="all-linear", task_type="CAUSAL_LM")'
MAYBE = "peft = None\nif USE_LORA:\n    " + LORA


def _packages(**over: str | None) -> dict:
    return {k: v for k, v in {**STACK, **over}.items() if v is not None}


def _cfg012(tmp_path: Path, monkeypatch, peft: str = LORA, after: str = "", config: dict | None = None, **pk):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT.format(peft=peft, after=after))
    snap = snapshot(1, packages=_packages(**pk))
    return [f for f in findings(snap, config=config or {}, launch="python train.py") if f.rule == "CFG012"]


def test_a_lora_config_in_code_with_checkpointing_is_an_error(tmp_path, monkeypatch):
    (f,) = _cfg012(tmp_path, monkeypatch)
    assert f.severity.value == "error"
    assert "peft_config=peft in train.py:10" in f.message and "TRL 0.15.2" in f.message
    assert (
        "transformers 4.50.3" in f.message
        and "does not require grad and does not have a grad_fn" in f.message
    )
    assert 'gradient_checkpointing_kwargs={"use_reentrant": False}' in f.fix and "trl==0.16" in f.fix


def test_an_adapter_on_one_branch_only_is_a_warning(tmp_path, monkeypatch):
    (f,) = _cfg012(tmp_path, monkeypatch, peft=MAYBE)
    assert f.severity.value == "warning" and "depends on the code's condition" in f.message


def test_trls_get_peft_config_follows_use_peft(tmp_path, monkeypatch):
    peft = "from trl import get_peft_config\npeft = get_peft_config(model_args)"
    assert _cfg012(tmp_path, monkeypatch, peft=peft) == []
    (f,) = _cfg012(tmp_path, monkeypatch, peft=peft, config={"use_peft": True})
    assert f.severity.value == "error" and "use_peft: true" in f.message


#: set 23's R1-Multimodal-Journey (healthy, read after it was measured): the script builds a
#: vendored GRPO trainer through a name (``trainer_cls(…, peft_config=get_peft_config(model_args))``)
#: whose own ``if peft_config is not None: get_peft_model(…)`` wraps the model; the launch asks for
#: no adapter (no use_peft), yet CFG012 warned that the adapter "depends on the code's condition"
VENDORED = """\
from peft import get_peft_model
from trl import get_peft_config
from transformers import Trainer

class VendoredGRPOTrainer(Trainer):
    def __init__(self, model, args, peft_config=None):
        if peft_config is not None:
            model = get_peft_model(model, peft_config)
        super().__init__(model=model, args=args)

trainer_cls = VendoredGRPOTrainer
trainer = trainer_cls(model=m, args=args, peft_config=get_peft_config(model_args))
trainer.train()
"""


def test_a_vendored_trainer_handed_trls_get_peft_config_follows_use_peft(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(VENDORED)
    snap = snapshot(1, packages=_packages())
    config = {"gradient_checkpointing": True}
    got = [f for f in findings(snap, config=config, launch="python train.py") if f.rule == "CFG012"]
    assert got == []
    got = findings(snap, config={**config, "use_peft": True}, launch="python train.py")
    assert [f.severity.value for f in got if f.rule == "CFG012"] == ["error"]


@pytest.mark.parametrize(
    ("peft", "after", "packages"),
    [
        (LORA, "", {"trl": "0.16.0"}),  # GRPOTrainer makes the inputs require grad
        (LORA, "", {"trl": "0.13.0"}),  # no GRPOTrainer yet
        (LORA, "", {"transformers": "5.0.0"}),  # checkpointing non-reentrant by default
        (LORA, "trainer.model.enable_input_require_grads()\n", {}),  # the dev case's fix commit
        ("peft = None", "", {}),
        (
            "from peft import prepare_model_for_kbit_training\n" + LORA,
            "prepare_model_for_kbit_training(m)\n",
            {},
        ),
    ],
)
def test_quiet(tmp_path, monkeypatch, peft, after, packages):
    assert _cfg012(tmp_path, monkeypatch, peft=peft, after=after, **packages) == []


def test_quiet_without_checkpointing_or_with_non_reentrant_kwargs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    snap = snapshot(1, packages=_packages())
    for config in (
        {"use_peft": True},  # gradient_checkpointing False: TRL's default before 0.22
        {
            "use_peft": True,
            "gradient_checkpointing": True,
            "gradient_checkpointing_kwargs": {"use_reentrant": False},
        },
        {
            "use_peft": True,
            "gradient_checkpointing": True,
            "gradient_checkpointing_kwargs": '{"use_reentrant": false}',
        },
        {"use_peft": False, "gradient_checkpointing": True},
    ):
        assert [f for f in findings(snap, config=config) if f.rule == "CFG012"] == [], config


def test_use_reentrant_true_fires_on_any_transformers(tmp_path, monkeypatch):
    config = {
        "use_peft": True,
        "gradient_checkpointing": True,
        "gradient_checkpointing_kwargs": {"use_reentrant": True},
    }
    snap = snapshot(1, packages=_packages(transformers="5.0.0"))
    (f,) = [f for f in findings(snap, config=config) if f.rule == "CFG012"]
    assert f.severity.value == "error" and "sets use_reentrant True" in f.message


def test_the_catalogue_entry_is_left_to_cfg012():
    snap = snapshot(1, packages=_packages())
    rules = [f.rule for f in findings(snap, config={"use_peft": True, "gradient_checkpointing": True})]
    assert rules.count("CFG012") == 1
    assert not any(
        f.rule == "KNF001" and "gradient" in f.message
        for f in findings(snap, config={"use_peft": True, "gradient_checkpointing": True})
    )


def _fix(tmp_path: Path, *args: str) -> dict:
    out = run_cli("fix", "--format", "json", *args, cwd=tmp_path)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def _rules(report: dict) -> set[str]:
    return {f["rule"] for f in report["findings"] if f["severity"] in ("warning", "error")}


def test_fix_writes_the_keyword_into_the_scripts_config_call(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT.format(peft=LORA, after=""))
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, packages=_packages())))
    out = _fix(tmp_path, "--facts", "facts.json", "--", "python", "train.py")
    assert (
        "CFG012" in out["fixed"]
        and "CFG012" in _rules(out["before"])
        and "CFG012" not in _rules(out["after"])
    )
    (edit,) = out["changes"]["files"]
    assert edit["new"] == [
        '    gradient_checkpointing_kwargs={"use_reentrant": False}, gradient_checkpointing=True,'
    ]
    again = run_cli(
        "check", "--facts", "facts.json", "--format", "json", "--", "python", "train.py", cwd=tmp_path
    )
    assert "CFG012" not in _rules(json.loads(again.stdout))


def test_fix_sets_the_config_file(tmp_path):
    (tmp_path / "c.yaml").write_text("use_peft: true\ngradient_checkpointing: true\n")
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, packages=_packages())))
    out = _fix(tmp_path, "--facts", "facts.json", "--config", "c.yaml")
    assert "CFG012" in out["fixed"] and "CFG012" not in _rules(out["after"])
    assert out["changes"]["config"]["set"] == {"gradient_checkpointing_kwargs": {"use_reentrant": False}}
