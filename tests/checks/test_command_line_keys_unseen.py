"""A command-line key is no proved GRPOConfig typo where envdoctor did not see every option the
training script declares: the script was not read (not here), or its argparse parser is handed to
code of another module (``add_bool_arg(parser, "use_lora", …)``), which adds options envdoctor does
not see. An interpreter held in a shell variable (``"$PY" train.py``) runs the script, which is then
read. A Weights & Biases run record (``wandb/run-*/files/config.yaml``) is no config for the hook.

Issue 35, held-out set 24 (read after it was measured): Baysian_reward_GRPO's launch
``"$PY" Bayesian_Full_GRPO_learned.py --max_prompt_length 2048 --use_lora …`` drew a CFG001 error
(the script's own flag taken for GRPOConfig's removed key); Small-LLM-RLVR's
``--per_device_batch_size=28`` (a script run from a subfolder) a CFG004 warning, and its
committed wandb record made the hook exit 2."""

from __future__ import annotations

import pytest

from envdoctor.plan.config_files import kind_of
from envdoctor.plan.launch import parse_launch
from tests.conftest import findings, run_cli, snapshot

STACK = {"trl": "1.4.0", "vllm": "0.11.0", "torch": "2.8.0", "transformers": "4.57.1"}

HELPERS = """\
import argparse


def add_bool_arg(parser: argparse.ArgumentParser, name: str, default: bool, help_text: str) -> None:
    group = parser.add_mutually_exclusive_group(required=False)
    group.add_argument(f"--{name}", dest=name, action="store_true", help=help_text)
    group.add_argument(f"--no_{name}", dest=name, action="store_false")
    parser.set_defaults(**{name: default})
"""

SCRIPT = """\
import argparse

from helpers import add_bool_arg
from trl import GRPOConfig, GRPOTrainer


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_prompt_length", type=int, default=1024)
    parser.add_argument("--learning_rate", type=float, default=1e-6)
    add_bool_arg(parser, "use_lora", True, "Enable LoRA adapters.")
    return parser.parse_args()


args = parse_args()
config = GRPOConfig(output_dir="o", learning_rate=args.learning_rate)
GRPOTrainer(model="m", reward_funcs=[], args=config).train()
"""

TRL_PARSER = """\
from trl import GRPOConfig, GRPOTrainer, TrlParser

(args,) = TrlParser((GRPOConfig,)).parse_args_and_config()
GRPOTrainer(model="m", reward_funcs=[], args=args).train()
"""


def _loud(got: list, rules: tuple[str, ...] = ("CFG001", "CFG004")) -> list:
    return [f for f in got if f.rule in rules and f.severity.value != "info"]


@pytest.mark.parametrize(
    "program",
    [
        '"$PY"',
        "$PY",
        "${PYTHON}",
        "$PYTHON_BIN -u",
        "${PYTHON:-python3}",
        "${CONDA_PY:-/opt/x/bin/python3.11}",
    ],
)
def test_an_interpreter_in_a_shell_variable_runs_the_script(program: str) -> None:
    launch = parse_launch(f"{program} train.py --lr 1")
    assert launch.unresolved is None
    assert launch.launcher == "python"
    assert launch.script == "train.py"


def test_an_interpreter_in_a_shell_variable_runs_a_module() -> None:
    launch = parse_launch("$PY -m pkg.train --lr 1")
    assert launch.unresolved is None
    assert launch.module == "pkg.train"


@pytest.mark.parametrize("line", ["$LAUNCHER train.py", "$PY run.sh", "${CMD} train.py"])
def test_another_variable_stays_unexpanded(line: str) -> None:
    assert parse_launch(line).unresolved is not None  # a launcher may hide in it: not guessed


def test_the_scripts_own_flags_behind_a_shell_variable_are_no_config_keys(tmp_path, monkeypatch) -> None:
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    got = findings(
        snapshot(1, packages=STACK),
        config={},
        launch='"$PY" train.py --max_prompt_length 2048 --use_lora --learning_rate 1e-6',
    )
    assert not _loud(got)


def test_options_a_helper_of_another_module_adds_are_not_judged_typos(tmp_path, monkeypatch) -> None:
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    got = findings(snapshot(1, packages=STACK), config={}, launch="python train.py --use_lora")
    assert not _loud(got)
    said = [f for f in got if f.rule == "CFG004" and "`use_lora`" in f.message]
    assert said and "adds options envdoctor does not read" in said[0].message


def test_a_script_not_here_leaves_command_line_keys_unjudged(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    got = findings(
        snapshot(1, packages=STACK), config={}, launch="python train_x.py --per_device_batch_size=28"
    )
    assert not _loud(got)
    said = [f for f in got if f.rule == "CFG004" and "`per_device_batch_size`" in f.message]
    assert said and "not read" in said[0].message


def test_a_typo_for_trls_own_parser_is_still_said(tmp_path, monkeypatch) -> None:
    (tmp_path / "train.py").write_text(TRL_PARSER)
    monkeypatch.chdir(tmp_path)
    got = findings(
        snapshot(1, packages=STACK), config={}, launch="python train.py --per_device_batch_size=28"
    )
    assert [f for f in _loud(got) if "`per_device_batch_size`" in f.message]


def test_a_wandb_run_record_is_no_config() -> None:
    record = {
        "_wandb": {"value": {"cli_version": "0.23.1"}},
        "learning_rate": {"value": 1e-6},
        "num_generations": {"value": 4},
        "vllm_server_base_url": {"value": None},
    }
    assert kind_of(record) == "run-record"
    assert kind_of({k: v["value"] for k, v in record.items() if k != "_wandb"}) == "grpo"
    assert kind_of({"wandb_version": 1, "learning_rate": {"desc": None, "value": 1e-6}}) == "run-record"


def test_the_hook_skips_a_wandb_run_record(tmp_path) -> None:
    run = tmp_path / "wandb" / "run-20251211_200102-sv3uzmiq" / "files"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(
        "_wandb:\n  value:\n    cli_version: 0.23.1\nlearning_rate:\n  value: 1.0e-06\n"
        "vllm_server_base_url:\n  value: null\nnum_generations:\n  value: 4\n"
    )
    result = run_cli("hook", "wandb/run-20251211_200102-sv3uzmiq/files/config.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
