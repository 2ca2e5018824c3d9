"""A GRPOConfig key the training script computes (``vllm_gpu_memory_utilization=args.util``,
``max_prompt_length=int(os.environ["MPL"])``) is unknown: the plan marks it once
(``Plan.computed`` / ``Plan.value`` -> ``COMPUTED``) and no rule reads TRL's default for it. Each
rule that reads a config value with a default is quiet on the computed key and still fires on the
literal (issue #35: the Text-to-SQL setup of heldout-2026-11-30b, whose script computes them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.checks import matching
from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.plan.interface import COMPUTED
from tests.conftest import MODERN, snapshot
from tests.memory.configs import QWEN25_7B

H100 = {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "compute_capability": "9.0"}
STACK = {
    "trl": "1.16.0",
    "transformers": "5.23.0",
    "torch": "2.11.0+cu130",
    "accelerate": "1.15.0",
    "vllm": "0.26.0",
}
COLOCATE = 'use_vllm=True, vllm_mode="colocate"'
STRANGER = {"pid": 4242, "name": "python other_job.py", "used_mib": 61440}
SCRIPT = """import os
from trl import GRPOConfig, GRPOTrainer

args = GRPOConfig(output_dir="o", {keywords})
trainer = GRPOTrainer(model={model!r}, args=args, reward_funcs=[], train_dataset=None)
trainer.train()
"""


def _script(folder: Path, keywords: str, model: str = "Qwen/Qwen2.5-0.5B") -> None:
    (folder / "train.py").write_text(SCRIPT.format(keywords=keywords, model=model))


def _found(snap: dict, launch: str, config: dict | None = None, select: list[str] | None = None) -> dict:
    ctx = Context(
        facts=from_dict(snap, "test-snapshot"),
        plan=build_plan(config_dict=config, launch=launch, live=False),
        network=False,
    )
    return {f.rule: f for f in run_rules(ctx, select=select).findings}


def _ctx(launch: str, packages: dict | None = None) -> Context:
    snap = snapshot(1, H100, packages=packages or STACK)
    return Context(facts=from_dict(snap, "t"), plan=build_plan(launch=launch, live=False), network=False)


def test_the_plan_marks_a_computed_key_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, 'max_prompt_length=int(os.environ["MPL"]), beta=0.0')
    plan = build_plan(launch="python train.py", live=False)
    assert plan.computed("max_prompt_length") and plan.value("max_prompt_length", 512) is COMPUTED
    assert not plan.computed("beta") and plan.value("beta") == 0.0
    assert plan.value("max_completion_length", 256) == 256  # not set: the default given
    ctx = Context(facts=from_dict(snapshot(1, H100, packages=STACK), "t"), plan=plan)
    assert ctx.value("max_prompt_length") is COMPUTED and ctx.value_unknown("max_prompt_length")


def test_trl_default_never_stands_for_a_computed_key(tmp_path, monkeypatch):
    """Known failures' ``when.config`` and CFG003's "TRL's default applies" read the default here."""
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, f'{COLOCATE}, vllm_gpu_memory_utilization=float(os.environ["UTIL"])')
    assert (
        matching.config_default(_ctx("python train.py"), "vllm_gpu_memory_utilization") is matching._MISSING
    )
    _script(tmp_path, COLOCATE)
    assert matching.config_default(_ctx("python train.py"), "vllm_gpu_memory_utilization") == 0.3


@pytest.mark.parametrize("rule", ["MEM001", "MEM003"])
def test_vllm_share_computed_is_not_judged(tmp_path, monkeypatch, rule):
    """MEM001 (a stranger leaves less free than the share) and MEM003 (the colocate budget) read
    vllm_gpu_memory_utilization: computed, neither the literal nor TRL's 0.3 is the run's."""
    monkeypatch.chdir(tmp_path)
    if rule == "MEM001":
        snap = snapshot(
            1, model=H100, packages=STACK, driver_cuda="13.0", used={0: 61440}, processes={0: [STRANGER]}
        )
        literal = "vllm_gpu_memory_utilization=0.3"
    else:
        snap = snapshot(1, model=H100, packages=STACK, driver_cuda="13.0", used={0: 55000})
        literal = "vllm_gpu_memory_utilization=0.3"  # as TRL's default: 0.3 + 67 % used is over 0.95
    _script(tmp_path, f"{COLOCATE}, {literal}")
    assert rule in _found(snap, "python train.py", select=[rule])
    _script(tmp_path, f'{COLOCATE}, vllm_gpu_memory_utilization=float(os.environ["UTIL"])')
    assert rule not in _found(snap, "python train.py", select=[rule])
    _script(tmp_path, COLOCATE)  # not set at all: TRL's default 0.3 is the run's share
    assert rule in _found(snap, "python train.py", select=[rule])


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_prompt_length_computed_is_not_truncation_at_the_default(tmp_path, monkeypatch):
    """DAT005 (TRL 0.20 cuts prompts to max_prompt_length, default 512) and DAT004 (TRL 0.25's
    colocated vLLM holds max_prompt_length + max_completion_length)."""
    monkeypatch.chdir(tmp_path)
    snap20 = snapshot(packages={**MODERN, "trl": "0.20.0"}, env={"HF_HOME": str(tmp_path / "hf")})
    data = _jsonl(tmp_path / "d.jsonl", [{"prompt": "word " * 2000}])
    for keywords, fires in (
        ("max_prompt_length=512", True),
        ("beta=0.0", True),  # unset: TRL 0.20's default 512
        ('max_prompt_length=int(os.environ["MPL"])', False),
    ):
        _script(tmp_path, keywords)
        got = _found(snap20, "python train.py", {"dataset_name": data}, select=["DAT005"])
        assert ("DAT005" in got) is fires, keywords
    snap25 = snapshot(packages={**MODERN, "trl": "0.25.1"}, env={"HF_HOME": str(tmp_path / "hf")})
    chat = _jsonl(tmp_path / "c.jsonl", [{"prompt": [{"role": "user", "content": "word " * 4000}]}])
    for keywords, fires in (
        ("max_completion_length=256", True),
        ('max_completion_length=int(os.environ["MCL"])', False),
        ('max_prompt_length=int(os.environ["MPL"])', False),
    ):
        _script(tmp_path, f"{COLOCATE}, {keywords}")
        got = _found(snap25, "python train.py", {"dataset_name": chat}, select=["DAT004"])
        assert ("DAT004" in got) is fires, keywords


def test_memory_plan_with_a_computed_batch_is_not_judged(tmp_path, monkeypatch):
    """MEM101 plans a full fp32 7B at the batch the script computes: TRL's default 8 is not it; the
    plan is still said (MEM104, its assumptions named). A computed bf16 planned at 2-byte compute
    is the smaller of its two plans: judged."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(QWEN25_7B))
    model = str(tmp_path / "model")
    snap = snapshot(n_gpus=1)
    config = {"model_name_or_path": model}
    _script(tmp_path, "per_device_train_batch_size=8", model=model)
    assert "MEM101" in _found(snap, "python train.py", config, select=["MEM101"])
    _script(tmp_path, 'per_device_train_batch_size=int(os.environ["BS"])', model=model)
    got = _found(snap, "python train.py", config, select=["MEM101", "MEM102", "MEM104"])
    assert "MEM101" not in got and "MEM102" not in got
    assert "not judged" in got["MEM104"].message and got["MEM104"].severity.value == "info"
    _script(tmp_path, "bf16=is_bf16_supported(), per_device_train_batch_size=8", model=model)
    assert "MEM101" in _found(snap, "python train.py", config, select=["MEM101"])


def test_use_peft_computed_is_no_certain_reference_model(tmp_path, monkeypatch):
    """CFG009 (a frozen reference model under DeepSpeed's optimizer section) is certain only where
    no adapter is trained: use_peft computed by the script is not its default False."""
    monkeypatch.chdir(tmp_path)
    ds = {"bf16": {"enabled": "auto"}, "optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 2}}
    (tmp_path / "ds.json").write_text(json.dumps(ds))
    snap = snapshot(2, packages={**MODERN, "trl": "0.16.0"})
    body = (
        "import os\nfrom trl import GRPOConfig, GRPOTrainer\n"
        "args = GRPOConfig(output_dir='o', deepspeed='ds.json', bf16=True, beta=0.04, use_peft={})\n"
        "GRPOTrainer(model='m', args=args, reward_funcs=[len])\n"
    )
    launch = "torchrun --nproc_per_node 2 train.py"
    severity = {}
    for value in ("False", "True", "os.environ.get('PEFT') == '1'"):
        (tmp_path / "train.py").write_text(body.format(value))
        got = _found(snap, launch, select=["CFG009"])
        severity[value] = got["CFG009"].severity.value if "CFG009" in got else None
    assert severity["False"] == "error" and severity["True"] is None
    assert severity["os.environ.get('PEFT') == '1'"] not in ("error", None)


def test_use_vllm_computed_is_not_off(tmp_path, monkeypatch):
    """The rules on vLLM's own pins say "this run never generates with vLLM" only where use_vllm
    is off: computed by the script, it is not known off (vLLM 0.7.2 pins torch 2.5.1)."""
    monkeypatch.chdir(tmp_path)
    snap = snapshot(
        1, packages={"trl": "0.15.1", "vllm": "0.7.2", "torch": "2.6.0", "transformers": "4.49.0"}
    )
    body = "import os\nfrom trl import GRPOConfig, GRPOTrainer\nargs = GRPOConfig(output_dir='o'{})\n"
    body += "GRPOTrainer(model='m', args=args, reward_funcs=[])\n"
    severity = {}
    for value in ("", ", use_vllm=False", ", use_vllm=os.environ.get('VLLM') == '1'"):
        (tmp_path / "train.py").write_text(body.format(value))
        ctx = Context(facts=from_dict(snap, "t"), plan=build_plan(launch="python train.py", live=False))
        pkg004 = [f for f in run_rules(ctx, select=["PKG004"]).findings if f.message.startswith("vllm")]
        severity[value] = pkg004[0].severity.value if pkg004 else None
    assert severity[""] == "info" and severity[", use_vllm=False"] == "info"
    assert severity[", use_vllm=os.environ.get('VLLM') == '1'"] == "error"


@pytest.mark.parametrize(
    "keywords",
    [
        'use_vllm=True, vllm_mode=os.environ.get("MODE", "server")',
        'use_vllm=os.environ.get("VLLM") == "1", vllm_mode="colocate"',
    ],
)
def test_a_generation_mode_the_script_decides_is_unknown_to_the_layout(tmp_path, monkeypatch, keywords):
    """No layout rule asserts a mode the script decides at run time, TRL's default included:
    computed, the layout has no mode (and says why); MEM003 (the colocate budget: vLLM's 0.9
    share leaves ~8 GiB) fires only on the literal colocate."""
    monkeypatch.chdir(tmp_path)
    snap = snapshot(1, model=H100, packages=STACK, driver_cuda="13.0")
    share = "vllm_gpu_memory_utilization=0.9"
    _script(tmp_path, f"{COLOCATE}, {share}")
    assert _ctx("python train.py").layout.generation_mode == "colocate"
    assert "MEM003" in _found(snap, "python train.py", select=["MEM003"])
    _script(tmp_path, f"{keywords}, {share}")
    lay = _ctx("python train.py").layout
    assert lay.generation_mode is None and lay.generation_unknown
    assert "computes" in lay.generation_unknown
    assert "MEM003" not in _found(snap, "python train.py", select=["MEM003"])
