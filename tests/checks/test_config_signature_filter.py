"""A training script that keeps only the keys the installed GRPOConfig takes
(``signature(GRPOConfig.__init__)``, as vivek100/ledgerlab-openenv's train_finbench_grpo.py does
after TRL >= 0.28 refused its max_prompt_length) drops a key this TRL lacks on purpose: CFG001
says the setting has no effect (info), not "installed TRL refuses it" (an error on a run that
trained). The same script without the filter still gets the error. Issue 35."""

from __future__ import annotations

from tests.conftest import findings, snapshot

STACK = {"trl": "0.29.0", "vllm": "0.12.0", "torch": "2.9.0", "transformers": "4.57.3"}
CONFIG = {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 16, "num_generations": 2}

FILTERED = """\
from inspect import signature

from trl import GRPOConfig, GRPOTrainer


def main(args):
    config_kwargs = {"output_dir": args.out, "max_prompt_length": args.max_prompt_length}
    supported = set(signature(GRPOConfig.__init__).parameters)
    grpo_config = GRPOConfig(**{k: v for k, v in config_kwargs.items() if k in supported})
    GRPOTrainer(model="Qwen/Qwen3-1.7B", args=grpo_config)
"""

DIRECT = """\
from trl import GRPOConfig, GRPOTrainer


def main(args):
    config_kwargs = {"output_dir": args.out, "max_prompt_length": args.max_prompt_length}
    grpo_config = GRPOConfig(**config_kwargs)
    GRPOTrainer(model="Qwen/Qwen3-1.7B", args=grpo_config)
"""


def _cfg001(tmp_path, script: str):
    (tmp_path / "train.py").write_text(script)
    config = CONFIG | {"max_prompt_length": 1536}
    found = findings(snapshot(1, packages=STACK), config=config, launch=f"python3 {tmp_path / 'train.py'}")
    return [f for f in found if f.rule == "CFG001"]


def test_a_script_that_filters_by_grpoconfigs_signature_drops_the_key_itself(tmp_path):
    (f,) = _cfg001(tmp_path, FILTERED)
    assert f.severity.value == "info"
    assert "signature(GRPOConfig.__init__) in" in f.message and "train.py:8" in f.message
    assert "no effect" in f.message and "refuses" not in f.message


def test_the_same_script_without_the_filter_is_refused(tmp_path):
    (f,) = _cfg001(tmp_path, DIRECT)
    assert f.severity.value == "error" and "removed from GRPOConfig in TRL 0.28.0" in f.message


def test_dataclasses_fields_of_grpoconfig_is_a_filter_too(tmp_path):
    script = FILTERED.replace("from inspect import signature", "from dataclasses import fields").replace(
        "set(signature(GRPOConfig.__init__).parameters)", "{f.name for f in fields(GRPOConfig)}"
    )
    (f,) = _cfg001(tmp_path, script)
    assert f.severity.value == "info" and "fields(GRPOConfig)" in f.message
