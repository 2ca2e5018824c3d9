"""``GRPOTrainer(model=POLICY)`` where the script binds POLICY to text (a literal, an f-string,
``os.environ.get("POLICY", "Qwen/…")``) hands TRL a name or path, which TRL from 0.26 loads with
device_map="auto" in one process that sees several GPUs: the split model runs (LAY003's warning),
not the nn.DataParallel wrap of a model object (its error). Held-out set 8's humor-r1 (TRL 1.2,
plain python, CUDA_VISIBLE_DEVICES=1,2, colocate) drew the error."""

from __future__ import annotations

import pytest

from envdoctor.plan.script_reader import read_script
from tests.conftest import findings, snapshot

BY_ENV = """\
import os
from trl import GRPOConfig, GRPOTrainer

POLICY = os.environ.get("POLICY", "Qwen/Qwen3-0.6B")
trainer = GRPOTrainer(model=POLICY, args=GRPOConfig(output_dir="o", use_vllm=True, vllm_mode="colocate"))
"""

BY_OBJECT = """\
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen3-0.6B")
trainer = GRPOTrainer(model=policy, args=GRPOConfig(output_dir="o", use_vllm=True, vllm_mode="colocate"))
"""


@pytest.mark.parametrize(
    ("script", "by_name"),
    [
        (BY_ENV, True),
        (BY_ENV.replace('os.environ.get("POLICY", "Qwen/Qwen3-0.6B")', 'f"Qwen/{SIZE}"'), True),
        (BY_ENV.replace('os.environ.get("POLICY", "Qwen/Qwen3-0.6B")', 'os.environ.get("POLICY")'), None),
        (BY_OBJECT, None),
    ],
)
def test_a_model_name_bound_to_text_is_by_name(tmp_path, script, by_name):
    (tmp_path / "train.py").write_text(script)
    assert read_script(tmp_path / "train.py").model_by_name is by_name


@pytest.mark.parametrize(("script", "severity"), [(BY_ENV, "warning"), (BY_OBJECT, "error")])
def test_one_process_on_two_gpus_splits_a_model_by_name(tmp_path, script, severity):
    (tmp_path / "train.py").write_text(script)
    stack = {"trl": "1.2.0", "vllm": "0.18.0", "torch": "2.10.0", "transformers": "4.57.1"}
    launch = f"CUDA_VISIBLE_DEVICES=1,2 python {tmp_path / 'train.py'}"
    (f,) = [f for f in findings(snapshot(3, packages=stack), launch=launch) if f.rule == "LAY003"]
    assert f.severity.value == severity
