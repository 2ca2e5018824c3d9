"""Issue 40's planted faults in one run's inputs: the check names each before any model loads
(the function, the column, the row count), and the probe's spec carries the same batch and
reward functions to its step (tests/probe/test_user_step.py runs them)."""

from __future__ import annotations

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.probe.plan.spec import spec_from_context
from tests.checks.test_data_rules import _jsonl, _word_tokenizer
from tests.conftest import MODERN, snapshot

TRAIN = """from trl import GRPOConfig, GRPOTrainer

def accuracy(completions, solution, **kwargs):
    return [1.0 if s in c else 0.0 for c, s in zip(completions, solution)]

def fmt(completions, **kwargs):
    scores = [0.5 for _ in completions]

def strict(completions, answer):
    return [0.0 for _ in completions]

if __name__ == "__main__":
    GRPOTrainer(model="org/base", reward_funcs=[accuracy, fmt, strict], args=GRPOConfig()).train()
"""


def test_planted_faults_are_named_by_the_check_and_reach_the_probe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hub_model = tmp_path / "hf" / "hub" / "models--org--base" / "snapshots" / ("c" * 40)
    _word_tokenizer(hub_model)  # a base model's tokenizer: no chat template
    rows = [{"prompt": [{"role": "user", "content": "word " * n}], "answer": "4"} for n in (10, 300, 500)]
    path = _jsonl(tmp_path / "d.jsonl", rows)  # "solution" renamed to "answer"
    (tmp_path / "train.py").write_text(TRAIN)
    config = {
        "dataset_name": str(path),
        "model_name_or_path": "org/base",
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_max_model_length": 256,
    }
    snap = snapshot(1, packages=MODERN, env={"HF_HOME": str(tmp_path / "hf")})
    ctx = Context(
        facts=from_dict(snap, "t"), plan=build_plan(launch="python train.py", config_dict=config, live=False)
    )
    found = {f.rule: f for f in run_rules(ctx).findings if f.rule.startswith("DAT")}
    assert {r for r, f in found.items() if f.severity.value == "error"} == {
        "DAT003",
        "DAT004",
        "DAT007",
        "DAT008",
        "DAT010",
    }
    assert "org/base" in found["DAT003"].message
    assert "2 of the first 3 rows" in found["DAT004"].message
    assert "accuracy" in found["DAT007"].message and "'solution'" in found["DAT007"].message
    assert "answer" in found["DAT007"].message  # the columns there are
    assert "strict" in found["DAT008"].message and "fmt" in found["DAT010"].message
    spec = spec_from_context(ctx)
    assert spec.user_rewards["attrs"] == ["accuracy", "fmt", "strict"]
    assert len(spec.user_data["rows"]) == 3 and spec.user_data["limit"] == 256
