"""A key set twice in one mapping of a GRPO / accelerate config (CFG007): yaml.safe_load, which
TRL's parser and accelerate use, keeps the last value without a word. A warning naming the key,
both lines, both values and the value the run uses; the same value twice is info; nested
mappings (a ``deepspeed_config:`` block) too; the values envdoctor judges are the last, as the
run's. Issue 35."""

from __future__ import annotations

import json

from envdoctor.parsing import parse_mapping
from tests.conftest import run_cli

TWICE = (
    "use_vllm: true\n"
    "num_generations: 8\n"
    "per_device_train_batch_size: 8\n"
    "max_steps: 100\n"
    "max_steps: 100\n"
    "use_vllm: false\n"
)
ZERO = (
    "compute_environment: LOCAL_MACHINE\n"
    "distributed_type: DEEPSPEED\n"
    "deepspeed_config:\n"
    "  zero_stage: 2\n"
    "  offload_optimizer_device: none\n"
    "  zero_stage: 3\n"
    "num_processes: 2\n"
)
CLEAN = "use_vllm: false\nnum_generations: 8\nper_device_train_batch_size: 8\nmax_steps: 100\n"


def _write(repo, files):
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return repo


def _hook(repo, *paths):
    out = run_cli("hook", "--format", "json", "--assume", "trl==0.18.0", *paths, cwd=repo)
    assert out.stdout, out.stderr
    found = [f for item in json.loads(out.stdout)["files"] for f in item["report"]["findings"]]
    return out.returncode, [f for f in found if f["rule"] == "CFG007"]


def test_the_loader_records_duplicates_with_lines_and_keeps_the_last_value():
    twice: list = []
    data = parse_mapping(TWICE + "ds:\n  a: &x {b: 1}\n  c:\n    <<: *x\n    b: 2\n", "t", duplicates=twice)
    assert data["use_vllm"] is False and data["max_steps"] == 100 and data["ds"]["c"] == {"b": 2}
    assert [(d["key"], d["first_line"], d["last_line"], d["first"], d["last"], d["same"]) for d in twice] == [
        ("max_steps", 4, 5, "100", "100", True),
        ("use_vllm", 1, 6, "true", "false", False),
    ]  # a `<<` merge overridden is YAML's own override, not a duplicate
    nested: list = []
    assert parse_mapping(ZERO, "t", duplicates=nested)["deepspeed_config"]["zero_stage"] == 3
    assert [(d["key"], d["first_line"], d["last_line"]) for d in nested] == [
        ("deepspeed_config.zero_stage", 4, 6)
    ]


def test_the_hook_warns_on_both_lines_and_the_value_the_run_uses(tmp_path):
    repo = _write(tmp_path, {"recipes/grpo.yaml": TWICE, "recipes/zero.yaml": ZERO})
    rc, found = _hook(repo, "recipes/grpo.yaml", "recipes/zero.yaml")
    assert rc == 0  # a warning: the run is not what the author reads, it still runs
    by_key = {f["evidence"]["key"]: f for f in found}
    use = by_key["use_vllm"]
    assert use["severity"] == "warning" and use["evidence"]["line"] == 6
    assert "line 1 says `true`" in use["message"] and "line 6 says `false`" in use["message"]
    assert "the run uses `false`" in use["message"] and use["evidence"]["file"] == "recipes/grpo.yaml"
    assert by_key["max_steps"]["severity"] == "info"
    zero = by_key["deepspeed_config.zero_stage"]
    assert zero["severity"] == "warning" and zero["evidence"]["file"] == "recipes/zero.yaml"
    assert "the run uses `3`" in zero["message"]


def test_check_config_says_it_and_a_clean_config_is_quiet(tmp_path):
    repo = _write(tmp_path, {"grpo.yaml": TWICE, "clean.yaml": CLEAN})
    out = run_cli("check", "--config", "grpo.yaml", "--assume", "trl==0.18.0", "--format", "json", cwd=repo)
    found = [f for f in json.loads(out.stdout)["findings"] if f["rule"] == "CFG007"]
    assert sorted((f["evidence"]["key"], f["severity"]) for f in found) == [
        ("max_steps", "info"),
        ("use_vllm", "warning"),
    ]
    rc, quiet = _hook(repo, "clean.yaml")
    assert rc == 0 and quiet == []
