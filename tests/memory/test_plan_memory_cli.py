"""`envdoctor plan-memory` as users run it, and the triage hook for an OOM in AdamW's step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.commands.plan_memory import gpu_memory_bytes
from envdoctor.errors import InputError
from tests.conftest import snapshot
from tests.memory.configs import QWEN25_05B, QWEN25_7B
from tests.triage.helpers import findings, judge

LOGS = Path(__file__).resolve().parent / "logs"


def _cli(*args, **kw):
    from tests.conftest import run_cli

    return run_cli("plan-memory", *args, **kw)


@pytest.fixture
def facts(write_json):
    return str(write_json(snapshot(n_gpus=2), "facts.json"))


def test_table_and_error_exit_for_a_run_that_will_not_fit(facts, model_dir, tmp_path):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(f"model_name_or_path: {model_dir(QWEN25_7B)}\n")
    out = _cli("--facts", facts, "--config", str(cfg), "--", "torchrun", "--nproc_per_node", "2", "train.py")
    assert out.returncode == 1, out.stderr
    assert "GPUs 0–1 — each: a rank" in out.stdout  # both ranks plan the same: one table
    assert "optimizer states" in out.stdout and "over the GPU" in out.stdout
    assert "✗ MEM101" in out.stdout and "fix: " in out.stdout


def test_json_output_and_exit_0_when_it_fits(facts, model_dir):
    out = _cli(
        "--facts",
        facts,
        "--model",
        model_dir(QWEN25_05B),
        "--format",
        "json",
        "--",
        "torchrun",
        "--nproc_per_node",
        "1",
        "train.py",
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["model"]["parameters"] == 494_032_768
    row = data["gpus"][0]
    assert row["gpu"] == 0 and row["headroom_bytes"] > 0
    assert {p["part"] for p in row["parts"]} >= {"weights", "optimizer states", "activations"}
    assert data["findings"] == []


def test_a_mistyped_option_is_a_usage_error_not_part_of_the_launch(facts, model_dir):
    out = _cli(
        "--facts",
        facts,
        "--model",
        model_dir(QWEN25_05B),
        "--gpu-memry",
        "80GiB",
        "--",
        "torchrun",
        "--nproc_per_node",
        "2",
        "train.py",
    )
    assert out.returncode == 2 and "No such option '--gpu-memry'" in out.stderr
    assert "internal error" not in out.stderr


@pytest.mark.parametrize(
    "launch", [["torchrun", "--nproc_per_node", "$N", "train.py"], ["sudo", "python", "train.py"]]
)
def test_an_unresolved_launch_is_an_input_error(facts, model_dir, launch):
    out = _cli("--facts", facts, "--model", model_dir(QWEN25_05B), "--", *launch)
    assert out.returncode == 2 and "launch command: not resolved" in out.stderr
    assert "internal error" not in out.stderr


def test_launch_line_after_the_options_without_a_double_dash(facts, model_dir):
    out = _cli(
        "--facts",
        facts,
        "--model",
        model_dir(QWEN25_05B),
        "--format",
        "json",
        "torchrun",
        "--nproc_per_node",
        "2",
        "train.py",
    )
    assert out.returncode == 0, out.stderr
    assert [row["gpu"] for row in json.loads(out.stdout)["gpus"]] == [0, 1]


def test_model_params_without_a_config_and_no_gpu(tmp_path):
    out = _cli("--model-params", "7B", "--gpu-memory", "80GiB", "--facts", str(_no_gpu_facts(tmp_path)))
    assert out.returncode in (0, 1), out.stderr
    assert "7.00B parameters" in out.stdout and "assumed: layers" in out.stdout


def test_no_verdict_without_gpu_memory(tmp_path):
    out = _cli("--model-params", "1.5B", "--facts", str(_no_gpu_facts(tmp_path)))
    assert out.returncode == 0 and "No verdict" in out.stdout


def test_missing_model_is_an_input_error(facts):
    out = _cli("--facts", facts, "--model", "org/not-downloaded-here")
    assert out.returncode == 2 and "not on this machine" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("bad", ["--model-params=seven", "--gpu-memory=lots"])
def test_bad_sizes_exit_2(facts, bad):
    out = _cli("--facts", facts, bad)
    assert out.returncode == 2 and bad.split("=")[0] in out.stderr


@pytest.mark.parametrize("text, gib", [("80", 80), ("80GiB", 80), ("81559MiB", 81559 / 1024)])
def test_gpu_memory_sizes(text, gib):
    assert gpu_memory_bytes(text) == pytest.approx(gib * 1024**3, rel=1e-6)


def test_gpu_memory_refuses_nonsense():
    with pytest.raises(InputError):
        gpu_memory_bytes("0.1")


def _no_gpu_facts(tmp_path) -> Path:
    snap = snapshot(n_gpus=0)
    path = tmp_path / "nogpu.json"
    path.write_text(json.dumps(snap))
    return path


# ---- triage: an OOM inside AdamW's step -------------------------------------------------------
ADAMW_RUN = {
    "model_init_kwargs": {"dtype": "bfloat16"},
    "optim": "adamw_torch",
    "gradient_checkpointing": True,
    "per_device_train_batch_size": 4,
}


def _triage(ctx):
    from envdoctor.triage.scanner import scan

    with open(LOGS / "oom_adamw_step.log", "rb") as fh:
        return findings(scan(fh), ctx)


def test_triage_without_the_model_names_the_full_gpu_before_the_fragmentation():
    """Issue 16's AdamW OOM: 92.10 of 94.99 GiB live. Without the model the plan cannot name the
    optimizer states, but a GPU 97 % full of live tensors is capacity; expandable_segments is
    named for what it can gain at most (a real step died so: docs/memory.md, s10)."""
    ctx = judge(snapshot(n_gpus=2), ADAMW_RUN, "torchrun --nproc_per_node 2 train.py")
    got = [f for f in _triage(ctx) if "out of memory" in f.message]
    assert got and got[0].rule == "TRI001" and "at the GPU's limit" in got[0].message
    assert "fragmentation" in got[0].message and "gains at most" in got[0].fix
    assert not got[0].fix.startswith("export PYTORCH_CUDA_ALLOC_CONF")


def test_triage_explains_adamw_oom_by_the_plan(model_dir):
    cfg = {**ADAMW_RUN, "model_name_or_path": model_dir(QWEN25_7B)}
    ctx = judge(snapshot(n_gpus=2), cfg, "torchrun --nproc_per_node 2 train.py")
    got = [f for f in _triage(ctx) if "out of memory" in f.message]
    assert got and got[0].rule == "MEM101"
    assert "optimizer step" in got[0].message and "optimizer states" in got[0].message
    assert "expandable_segments" not in got[0].fix and "saves ~" in got[0].fix
    assert got[0].evidence["cause"] == "optimizer-states"


def test_triage_keeps_fragmentation_when_the_plan_is_small(model_dir):
    cfg = {**ADAMW_RUN, "model_name_or_path": model_dir(QWEN25_05B)}
    ctx = judge(snapshot(n_gpus=2), cfg, "torchrun --nproc_per_node 2 train.py")
    got = [f for f in _triage(ctx) if "out of memory" in f.message]
    assert got and got[0].rule == "TRI001"


def test_gpus_that_plan_the_same_share_one_table_and_one_finding(facts, model_dir):
    # two ranks of one setup: one table for GPUs 0–1 in text; JSON keeps a row per GPU
    out = _cli(
        "--facts", facts, "--model", model_dir(QWEN25_05B), "torchrun", "--nproc_per_node", "2", "train.py"
    )
    assert out.returncode == 0, out.stderr
    assert "GPUs 0–1 — each: a rank" in out.stdout
    assert "\nGPU 0 —" not in out.stdout and "\nGPU 1 —" not in out.stdout
    assert out.stdout.count("total at peak") == 1


def test_same_gpus_keeps_different_plans_apart():
    from envdoctor.plan.memory.parts import GpuPlan, Part, each_role, gpus_text, same_gpus

    a = [GpuPlan(gpu=i, role=f"rank {i}", parts=[Part("weights", 10, "")], capacity=80) for i in range(3)]
    b = GpuPlan(gpu=3, role="rank 3", parts=[Part("weights", 20, "")], capacity=80)
    groups = same_gpus([*a, b])
    assert [[r.gpu for r in g] for g in groups] == [[0, 1, 2], [3]]
    assert gpus_text([0, 1, 2]) == "GPUs 0–2" and gpus_text([0, 2]) == "GPUs 0, 2"
    assert gpus_text([4]) == "GPU 4" and gpus_text([None]) == "each GPU"
    assert each_role("rank 0, rank 1 + vLLM (colocated)", 2) == "each: 2 ranks + vLLM (colocated)"
    assert each_role("rank 5", 1) == "rank 5"


OPEN_R1 = Path(__file__).resolve().parents[1] / "conformance/setups/openr1-colocate-ddp"


def test_open_r1_colocate_recipe_on_its_own_vllm_is_a_warning_not_an_error(tmp_path):
    """open-r1's GRPO recipe (TRL 0.18, vLLM 0.8.5, 8 × H100) with ddp.yaml and colocate: vLLM
    0.8.5's V1 engine counts the policy weights the process already held in its 0.3 × the GPU
    (rules/knowledge/vllm.yaml), so the plan is thin (a warning), not over the GPU (an error)."""
    facts = json.loads((OPEN_R1 / "facts.json").read_text())
    launch = [
        "accelerate",
        "launch",
        "--config_file",
        "recipes/accelerate_configs/ddp.yaml",
        "src/open_r1/grpo.py",
        "--config",
        "recipes/DeepSeek-R1-Distill-Qwen-1.5B/grpo/config_demo.yaml",
        "--vllm_mode",
        "colocate",
    ]

    def plan(vllm: str) -> dict:
        snap = {**facts, "packages": {**facts["packages"], "vllm": {"version": vllm}}}
        path = tmp_path / f"facts-{vllm}.json"
        path.write_text(json.dumps(snap))
        out = _cli(
            "--facts",
            str(path),
            "--model-params",
            "1.5B",
            "--format",
            "json",
            "--config",
            "recipes/DeepSeek-R1-Distill-Qwen-1.5B/grpo/config_demo.yaml",
            "--",
            *launch,
            cwd=OPEN_R1,
        )
        return json.loads(out.stdout)

    own = plan("0.8.5.post1")
    assert [f["rule"] for f in own["findings"]] == ["MEM102"]
    # TRL 0.18 has no vllm_enable_sleep_mode (from 0.23.0): no fix names it
    assert "vllm_enable_sleep_mode" not in own["findings"][0]["fix"]
    assert "per_device_train_batch_size: 8" in own["findings"][0]["fix"]
    part = next(p for p in own["gpus"][0]["parts"] if p["part"].startswith("vLLM"))
    assert "less the 3.4 GiB the process held when vLLM started" in part["note"]
    # from vLLM 0.9.1 the fraction is vLLM's own: the same recipe is over the GPU
    later = plan("0.9.1")
    assert [f["rule"] for f in later["findings"]] == ["MEM101"]
    later_part = next(p for p in later["gpus"][0]["parts"] if p["part"].startswith("vLLM"))
    assert abs(later_part["bytes"] - part["bytes"] - 3.4 * 2**30) < 0.1 * 2**30
