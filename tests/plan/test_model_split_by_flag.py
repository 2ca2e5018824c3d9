"""A loader's ``device_map=args.device_map`` reads a command-line option: where the launch line
(or the option's default: an argparse flag's, a dataclass field's for HfArgumentParser) gives
``auto`` / ``balanced``, the model is split over the visible GPUs and transformers.Trainer keeps
n_gpu at 1 (``is_model_parallel``), so LAY003 says no nn.DataParallel. self-learn-medicalgpt (set
24): a DPO script on two GPUs with ``--device_map auto`` got a warning naming GRPOTrainer.
TRL's refusal names the trainer class (``type(self).__name__``): the message names the one the
script builds. Issue 35."""

from __future__ import annotations

import pytest

from tests.conftest import findings, snapshot

DATACLASS = """\
from dataclasses import dataclass, field
from typing import Optional

from transformers import AutoModelForCausalLM, HfArgumentParser
from trl import DPOConfig, DPOTrainer


@dataclass
class ScriptArguments:
    model_name_or_path: Optional[str] = field(default=None)
    device_map: Optional[str] = field(default={default!r})


args = HfArgumentParser(ScriptArguments).parse_args_into_dataclasses()[0]
model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path, device_map=args.device_map)
trainer = DPOTrainer(model=model, args=DPOConfig(output_dir="o"), train_dataset=None)
trainer.train()
"""

ARGPARSE = """\
import argparse

from transformers import AutoModelForCausalLM
from trl import DPOConfig, DPOTrainer

parser = argparse.ArgumentParser()
parser.add_argument("--device_map", default={default!r})
args = parser.parse_args()
model = AutoModelForCausalLM.from_pretrained("m", device_map=args.device_map)
DPOTrainer(model=model, args=DPOConfig(output_dir="o"), train_dataset=None).train()
"""

STACK = {"trl": "1.16.0", "torch": "2.10.0", "transformers": "4.57.1"}


def _lay003(tmp_path, script: str, args: str = ""):
    (tmp_path / "train.py").write_text(script)
    launch = f"CUDA_VISIBLE_DEVICES=0,1 python {tmp_path / 'train.py'} {args}".strip()
    found = [f for f in findings(snapshot(2, packages=STACK), launch=launch) if f.rule == "LAY003"]
    return found[0] if found else None


@pytest.mark.parametrize("script", [DATACLASS, ARGPARSE])
def test_device_map_auto_from_the_launch_line_is_model_parallel(tmp_path, script):
    f = _lay003(tmp_path, script.format(default="cuda:0"), "--device_map auto")
    assert f is not None and f.severity.value == "info"
    assert "keeps n_gpu at 1" in f.message and "DataParallel`" not in f.message
    assert "GRPOTrainer" not in f.message


@pytest.mark.parametrize("script", [DATACLASS, ARGPARSE])
def test_device_map_auto_by_default_is_model_parallel(tmp_path, script):
    f = _lay003(tmp_path, script.format(default="auto"))
    assert f is not None and f.severity.value == "info" and "keeps n_gpu at 1" in f.message


def test_one_device_given_keeps_the_refusal_naming_the_trainer_built(tmp_path):
    f = _lay003(tmp_path, DATACLASS.format(default="auto"), "--device_map cuda:0")
    assert f is not None and f.severity.value in ("warning", "error")
    assert "DPOTrainer does not support" in f.message and "GRPOTrainer" not in f.message
