"""A model object the script loads with a device map over the GPUs (``device_map="auto"``,
``"balanced"``, a dict of several GPUs) is split across devices: transformers.Trainer keeps n_gpu
at 1 for it (``is_model_parallel``), so neither the nn.DataParallel wrap nor TRL's refusal of it
happens (LAY003 is no error); a computed device_map leaves that open (a warning). Held-out set 18's
codeforge-asm loads Ministral-8B in 4 bits over two T4s with ``device_map=model_cfg.get(...)``."""

from __future__ import annotations

import pytest

from envdoctor.plan.script_reader import read_script
from tests.conftest import findings, snapshot

SCRIPT = """\
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen3-0.6B"{placed})
trainer = GRPOTrainer(model=policy, args=GRPOConfig(output_dir="o"))
"""


@pytest.mark.parametrize(
    ("placed", "split"),
    [
        (', device_map="auto"', "spread"),
        (', device_map="balanced"', "spread"),
        (', device_map="sequential"', "unknown"),  # one GPU where the model fits it
        (', device_map={"model.embed_tokens": 0, "lm_head": 1}', "spread"),
        (', device_map={"": 0}', None),
        (', device_map="cuda:0"', None),
        (", device_map=None if ddp else cfg.get('device_map', 'auto')", "unknown"),
        ("", None),
    ],
)
def test_the_device_map_is_read(tmp_path, placed, split):
    (tmp_path / "train.py").write_text(SCRIPT.format(placed=placed))
    assert read_script(tmp_path / "train.py").model_split == split


@pytest.mark.parametrize(
    ("placed", "severity"),
    [
        (', device_map="auto"', "info"),  # model parallelism, as meant
        (", device_map=cfg.get('device_map', 'auto')", "warning"),  # computed: not certain
        (', device_map={"": 0}', "error"),  # one device: the wrap (TRL 1.2 lets it happen)
        ("", "error"),
    ],
)
def test_one_process_on_two_gpus_with_a_split_model_is_no_error(tmp_path, placed, severity):
    (tmp_path / "train.py").write_text(SCRIPT.format(placed=placed))
    stack = {"trl": "1.2.0", "vllm": "0.18.0", "torch": "2.10.0", "transformers": "4.57.1"}
    launch = f"CUDA_VISIBLE_DEVICES=1,2 python {tmp_path / 'train.py'}"
    (f,) = [f for f in findings(snapshot(3, packages=stack), launch=launch) if f.rule == "LAY003"]
    assert f.severity.value == severity
    if severity == "info":
        assert "keeps n_gpu at 1" in f.message


@pytest.mark.parametrize(
    ("kwargs", "split"),
    [
        ('kw = {"device_map": "auto", "torch_dtype": "bfloat16"}', "spread"),
        ('kw = dict(device_map="balanced")', "spread"),
        ("kw = {'device_map': None if ddp else cfg.get('device_map', 'auto')}", "unknown"),
        ('kw = {"torch_dtype": "bfloat16"}', None),
    ],
)
def test_a_device_map_in_the_loader_kwargs_is_read(tmp_path, kwargs, split):
    script = SCRIPT.format(placed=", **kw").replace("policy = ", kwargs + "\npolicy = ")
    (tmp_path / "train.py").write_text(script)
    assert read_script(tmp_path / "train.py").model_split == split


def test_the_fix_of_a_split_model_is_advice(tmp_path):
    """No GPU reserved for vLLM: one process with the model split over the GPUs is model
    parallelism as meant; the fix is advice (one rank per GPU only where the model fits one GPU),
    with no change to apply."""
    (tmp_path / "train.py").write_text(SCRIPT.format(placed=', device_map="auto"'))
    stack = {"trl": "1.2.0", "vllm": "0.18.0", "torch": "2.10.0", "transformers": "4.57.1"}
    launch = f"CUDA_VISIBLE_DEVICES=1,2 python {tmp_path / 'train.py'}"
    (f,) = [f for f in findings(snapshot(3, packages=stack), launch=launch) if f.rule == "LAY003"]
    assert f.fix.startswith("nothing, where the model needs the GPUs together; where it fits one GPU")
    assert not f.remedy
