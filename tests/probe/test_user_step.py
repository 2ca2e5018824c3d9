"""The probe's real GRPO step (CPU) on the user's first batch with the user's reward functions:
a healthy TRL-style dataset with TRL's own reward stays quiet; planted faults are found in the
step, each under its DAT id naming the function or the row count. Two steps in all (slow)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.plan.build import build_plan
from envdoctor.probe.interface import ProbeResult, ProbeSpec
from envdoctor.probe.judge.user_judge import judge_user
from envdoctor.probe.plan.spec import spec_from_context
from envdoctor.probe.run.runner import WORKER, run_probe
from tests.conftest import MODERN, snapshot


def _schema_errors(result: ProbeResult) -> list[str]:
    """probe.data and probe.rewards against the report schema's ``probe`` definition."""
    import jsonschema
    from referencing import Registry, Resource

    from envdoctor import schemas

    registry = Registry().with_resources(
        (f"{n}.schema.json", Resource.from_contents(schemas.load(n))) for n in schemas.NAMES
    )
    validator = jsonschema.Draft202012Validator(
        {"$ref": "report.schema.json#/$defs/probe"}, registry=registry
    )
    doc = json.loads(json.dumps({"data": result.data, "rewards": result.rewards}))
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")

TRAIN = '''"""A TRL-style GRPO script: the training code under the __main__ guard."""
from datasets import load_from_disk
from trl import GRPOConfig, GRPOTrainer
from trl.rewards import think_format_reward

def accuracy(completions, solution, **kwargs):
    return [1.0 if s in c[0]["content"] else 0.0 for c, s in zip(completions, solution)]

if __name__ == "__main__":
    trainer = GRPOTrainer(model="Qwen/Qwen2-0.5B-Instruct", reward_funcs=[think_format_reward, accuracy],
                          args=GRPOConfig(output_dir="out"), train_dataset=load_from_disk("data"))
    trainer.train()
'''


def test_a_trl_style_dataset_and_trls_own_reward_run_quiet_in_the_probe(tmp_path, probe_tmp, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [
        {
            "prompt": [
                {"role": "system", "content": "Think in <think></think>, then answer."},
                {"role": "user", "content": f"What is {i} + {i}?"},
            ],
            "solution": str(2 * i),
        }
        for i in range(12)
    ]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "data"))
    (tmp_path / "train.py").write_text(TRAIN)
    snap = snapshot(1, packages=MODERN, env={"HF_HOME": str(tmp_path / "hf")})
    config = {"dataset_name": str(tmp_path / "data"), "num_generations": 2, "per_device_train_batch_size": 2}
    ctx = Context(
        facts=from_dict(snap, "t"), plan=build_plan(launch="python train.py", config_dict=config, live=False)
    )
    spec = dataclasses.replace(
        spec_from_context(ctx, timeout_s=150), launcher=[sys.executable], rank_gpus={0: None}
    )
    assert spec.user_data["source"].startswith(str(tmp_path / "data")) and len(spec.user_data["rows"]) == 12
    result = run_probe(spec)
    errors = [f for f in result.findings if f.severity == Severity.ERROR]
    assert result.status == "pass", (errors, result.log_tail[-2000:])
    assert not [f for f in result.findings if f.rule.startswith("DAT")]
    assert (
        result.data["used"]
        and result.data["rows_passed"] == 12
        and result.data["columns"] == ["prompt", "solution"]
    )
    assert result.data["chat_template"].startswith(
        "the probe's plain template"
    )  # the generic model's tokenizer
    funcs = {f["name"]: f for f in result.rewards["functions"]}
    assert set(funcs) == {"think_format_reward", "accuracy"} and result.rewards["used"]
    assert all(
        f["called"] >= 1 and f["shape"].startswith("list[") and not f["errors"] for f in funcs.values()
    )
    assert "trl/rewards/format_rewards.py:" in funcs["think_format_reward"]["where"]
    assert funcs["accuracy"]["where"] == "train.py:6"
    assert _schema_errors(result) == []
    static = run_rules(ctx).findings  # the check before the probe is quiet on it too
    assert not [f for f in static if f.rule.startswith("DAT") and f.severity != Severity.INFO]


PLANTED = """import math

def needs_answer(completions, answer, **kwargs):  # the dataset's column is "solution"
    return [0.0] * len(completions)

def returns_none(completions, **kwargs):
    scores = [1.0 for _ in completions]  # forgot the return on this path

def nan_reward(completions, **kwargs):
    return [math.nan for _ in completions]

def one_reward(completions, **kwargs):
    return [1.0]

def boom(completions, solution, **kwargs):
    return [float(s) / 0 for s in solution]
"""


def test_planted_faults_are_found_in_the_step_naming_function_and_rows(tmp_path):
    (tmp_path / "planted.py").write_text(PLANTED)
    rows = [
        {"prompt": [{"role": "user", "content": "two plus two " * n}], "solution": "4"}
        for n in (1, 2, 30, 40)
    ]
    names = ["needs_answer", "returns_none", "nan_reward", "one_reward", "boom"]
    spec = {
        "out_dir": str(tmp_path),
        # the user's tokenizer (here the worker's word-level one, as if cached): no chat template
        "model_faithful": True,
        "user_data": {
            "dataset": "planted.jsonl",
            "source": str(tmp_path / "planted.jsonl"),
            "rows": rows,
            "rows_read": 4,
            "columns": ["prompt", "solution"],
            "user_tokenizer": "org/base-model",
            "limit": 64,
            "limit_key": "vllm_max_model_length",
        },
        "user_rewards": {"items": [{"module": "planted", "attr": n} for n in names], "root": str(tmp_path)},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run(
        [sys.executable, str(WORKER), str(tmp_path / "spec.json")],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=tmp_path,
    )
    rank = json.loads((tmp_path / "rank0.json").read_text())
    assert proc.returncode == 0 and rank["ok"], rank.get("error")  # the faults were replaced: the step ran
    result = ProbeResult(status="pass", ranks={0: {**rank, "finished": True}})
    judge_user(ProbeSpec(launcher=[sys.executable], user_data=spec["user_data"]), result)
    found = {f.rule: f for f in result.findings}
    assert set(found) == {"DAT003", "DAT004", "DAT007", "DAT010", "DAT011", "DAT012", "DAT013"}
    assert all(f.severity == Severity.ERROR for f in found.values())
    assert "org/base-model" in found["DAT003"].message
    assert (
        "2 of the first 4 rows" in found["DAT004"].message
        and "vllm_max_model_length" in found["DAT004"].message
    )
    assert "needs_answer (planted.py:3) requires 'answer'" in found["DAT007"].message
    assert "solution" in found["DAT007"].message  # what TRL passed instead
    assert "returns_none (planted.py:6) returned None" in found["DAT010"].message
    assert "boom" in found["DAT011"].message and "planted.py:16 in boom" in found["DAT011"].message
    assert "ZeroDivisionError" in found["DAT011"].message
    assert "nan_reward" in found["DAT012"].message and "one_reward" in found["DAT013"].message
    assert result.data["rows_over_length"] == 2 and result.data["longest_tokens"] > 64
    assert _schema_errors(result) == []
    shapes = {f["name"]: f["shape"] for f in result.rewards["functions"]}
    assert shapes["one_reward"] == "list[1] of float" and shapes["returns_none"] == "NoneType"
