"""A fix that moves transformers keeps the model loadable where its config.json was not read
(checks/model_floors.transformers_floor): a model named by a hub id whose words are a model type
of rules/knowledge/models.json.gz keeps that type's first release; a model envdoctor cannot place,
or none named, keeps the installed release, so the plan moves the other package instead. Set 18's
judge: A100-Kernel-RL's `pip install transformers==4.56.2` under Qwen3.5 (first in 5.2.0), and
teaching_an_llm_to_reason's three-package downgrade."""

from __future__ import annotations

import re

from envdoctor.checks.model_floors import _type_from_name
from tests.conftest import findings, snapshot

SCRIPT = (
    "from trl import GRPOConfig, GRPOTrainer\n\n"
    "trainer = GRPOTrainer(model={model!r}, args=GRPOConfig(output_dir='o', num_generations=2,"
    " per_device_train_batch_size=2), reward_funcs=[])\n"
)
PACKAGES = {"trl": "0.24.0", "transformers": "5.2.0", "torch": "2.9.0", "accelerate": "1.12.0"}


def _knf(tmp_path, model: str | None, config: dict | None = None):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(model=model or "m"))
    cfg = dict(config or {})
    if model:
        cfg["model_name_or_path"] = model
    found = findings(snapshot(1, packages=PACKAGES), config=cfg, launch=f"python {script}")
    return [f for f in found if f.rule == "KNF001" and f.severity.value in ("error", "warning")]


def _transformers_pins(f) -> list[str]:
    texts = [f.fix] + [str(r.packages.get("transformers", "")) for r in (f.remedy, *f.alternatives) if r]
    return [v for t in texts for v in re.findall(r"transformers==([\w.]+)", t)] + [
        str(r.packages["transformers"])
        for r in (f.remedy, *f.alternatives)
        if r and "transformers" in r.packages
    ]


def test_a_named_model_keeps_its_types_first_release(tmp_path):
    found = _knf(tmp_path, "Qwen/Qwen3.5-9B")
    assert found, "TRL 0.24 + transformers 5.2 (warnings_issued) fires"
    for f in found:
        for v in _transformers_pins(f):
            assert tuple(map(int, v.split(".")[:2])) >= (5, 2), f.fix


def test_an_unknown_model_gets_no_transformers_downgrade(tmp_path):
    found = _knf(tmp_path, None)
    assert found
    for f in found:
        for v in _transformers_pins(f):
            assert tuple(map(int, v.split(".")[:2])) >= (5, 2), f.fix


def test_the_model_type_a_name_states():
    assert _type_from_name("Qwen/Qwen3.5-9B")[0] == "qwen3_5"
    assert _type_from_name("google/gemma-3-1b-it")[0] == "gemma3"
    assert _type_from_name("Qwen/Qwen3-0.6B")[0] == "qwen3"
    # every word of the family or nothing: phi-4 is a phi3 model, not phi's first release
    assert _type_from_name("microsoft/phi-4") is None
    assert _type_from_name("Qwen/Qwen2.5-0.5B-Instruct") is None
    assert _type_from_name("./outputs/checkpoint-500") is None


def test_a_local_folder_states_no_model_type():
    """A folder's name is the user's (a fine-tune of anything, a Llama 3.1 in /data/ckpt/llama
    needing 4.43.1): not llama's first release but the installed one keeps the floor."""
    for name in ("./outputs/qwen3", "/data/ckpt/llama", "runs/exp1/qwen3", "~/models/gemma-2-2b"):
        assert _type_from_name(name) is None, name
    assert _type_from_name("gpt2")[0] == "gpt2"  # a legacy hub id without an owner


def test_active_parameters_name_the_moe_type():
    """Qwen2-57B-A14B is a qwen2_moe model (first in 4.40), not qwen2 (4.37)."""
    assert _type_from_name("Qwen/Qwen2-57B-A14B")[0] == "qwen2_moe"
    assert _type_from_name("Qwen/Qwen3-30B-A3B")[0] == "qwen3_moe"
