"""A script that reads its config file itself (``yaml.safe_load`` into its own dataclass, whose
base class lives in another module of the repository, run as ``-m pkg.module`` from a src layout)
declares the keys of that file: they are not GRPOConfig's to call typos. A launch line's
``$PORT`` (a shell variable as a script holds it) is the shell's value, not bad input. Issue 35
(held-out set 9: a healthy published setup drew CFG004 on its own `auto_resume_from_checkpoint`)."""

from __future__ import annotations

import os

import pytest

from envdoctor.errors import InputError
from envdoctor.plan.script_file import script_file
from envdoctor.plan.script_reader import read_script
from envdoctor.plan.values import validate
from tests.conftest import findings, snapshot

STACK = {"trl": "1.0.0", "vllm": "0.17.1", "torch": "2.10.0", "transformers": "4.57.1"}

BASE = """\
from dataclasses import dataclass
import yaml


@dataclass
class TrainConfig:
    auto_resume_from_checkpoint: bool = True
    local_dataset_path: str = "data"


def load(path, cls):
    with open(path) as f:
        raw = yaml.safe_load(f) or {}
    return cls(**raw)
"""

SCRIPT = """\
import argparse
from dataclasses import dataclass

from trl import GRPOConfig, GRPOTrainer

from train.config import TrainConfig, load


@dataclass
class LoraConfig(TrainConfig):
    lora_rank: int = 16


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config")
    cfg = load(p.parse_args().config, LoraConfig)
    args = GRPOConfig(output_dir="o")
    GRPOTrainer(model="Qwen/Qwen3-0.6B", args=args).train()


main()
"""


def _repo(tmp_path, loads: bool = True):
    pkg = tmp_path / "src" / "train"
    pkg.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 't'\n")
    (pkg / "__init__.py").write_text("")
    base = BASE if loads else BASE.replace("yaml.safe_load(f)", "dict()")
    (pkg / "config.py").write_text(base)
    (pkg / "grpo.py").write_text(SCRIPT)
    return pkg / "grpo.py"


def test_a_module_run_with_dash_m_is_found_under_src(tmp_path, monkeypatch):
    _repo(tmp_path)
    monkeypatch.chdir(tmp_path)

    class Line:
        script = None
        module = "train.grpo"

    assert script_file(Line()) == os.path.join("src", "train", "grpo.py")  # type: ignore[arg-type]


def test_a_script_that_loads_its_config_itself_declares_its_dataclasses_fields(tmp_path):
    decl = read_script(_repo(tmp_path))
    keys = decl.keys()
    assert "auto_resume_from_checkpoint" in keys and "lora_rank" in keys  # the base's too
    assert "reads its config file itself (yaml.safe_load" in keys["auto_resume_from_checkpoint"]


def test_without_its_own_loader_the_dataclasses_do_not_declare_the_config(tmp_path):
    declared = read_script(_repo(tmp_path, loads=False)).keys()
    assert "auto_resume_from_checkpoint" not in declared


def _cfg(tmp_path, monkeypatch, loads: bool):
    _repo(tmp_path, loads)
    monkeypatch.chdir(tmp_path)
    config = {"auto_resume_from_checkpoint": True, "learning_rate": 1e-6}
    launch = "accelerate launch --num_processes 1 -m train.grpo"
    got = findings(snapshot(1, packages=STACK), config=config, launch=launch)
    return [f for f in got if f.rule == "CFG004" and f.severity.value != "info"]


def test_its_own_key_close_to_a_trainingarguments_field_is_no_typo(tmp_path, monkeypatch):
    assert _cfg(tmp_path, monkeypatch, loads=True) == []


def test_the_same_key_without_the_scripts_loader_is_still_a_likely_typo(tmp_path, monkeypatch):
    (f,) = _cfg(tmp_path, monkeypatch, loads=False)
    assert "resume_from_checkpoint" in f.message


def test_a_shell_variable_on_the_command_line_is_the_shells_value_not_bad_input():
    validate("vllm_server_port", "$VLLM_SERVER_PORT", "command line")
    validate("vllm_server_port", "${PORT:-8000}", "command line")
    with pytest.raises(InputError):  # in a config file TRL's parser reads the text itself
        validate("vllm_server_port", "$VLLM_SERVER_PORT", "config file c.yaml")
    with pytest.raises(InputError):
        validate("vllm_server_port", "80a", "command line")


def test_cfg005_leaves_a_command_line_shell_variable_alone(tmp_path):
    (tmp_path / "train.py").write_text("from trl import GRPOTrainer\n")
    got = findings(
        snapshot(2, packages=STACK),
        config={"use_vllm": True, "vllm_mode": "server"},
        launch=f"accelerate launch --num_processes 1 {tmp_path / 'train.py'} --vllm_server_port $PORT",
    )
    assert not [f for f in got if f.rule == "CFG005"]
