"""Issue 35 item 2: the memory rules' fixes as data. For each rule, a scenario where the fix
closure (`envdoctor fix`) leaves no error from that rule, and no fix adds a finding; what no
config edit can do (ZeRO-3, offload, another GPU) stays words, said not machine-applicable."""

from __future__ import annotations

from envdoctor.checks.context import Context
from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.plan.build import build_plan
from envdoctor.remedy.closure import Rerun, close, prove
from tests.conftest import A100_40, H100, snapshot
from tests.memory.configs import LLAMA3_8B, QWEN25_05B, QWEN25_15B

ONE = "torchrun --nproc_per_node 1 train.py"


def _fixed(snap: dict, config: dict, launch: str, rule: str):
    facts = from_dict(snap, "test-snapshot")
    plan = build_plan(config_dict=config, launch=launch, live=False)
    rerun = Rerun()
    closure = close(facts, plan, rerun)
    before = [f for f in closure.before if f.rule == rule]
    assert before, f"{rule} does not fire in its scenario"
    left = [f for f in closure.after if f.rule == rule and f.severity is not Severity.INFO]
    assert not left, (left, closure.unfixed)
    assert closure.fixed

    def loud(found: list) -> dict:
        out: dict = {}
        for f in found:
            if f.severity is not Severity.INFO:
                out[(f.rule, f.severity)] = out.get((f.rule, f.severity), 0) + 1
        return out

    was, now = loud(closure.before), loud(closure.after)
    added = {k: n for k, n in now.items() if n > was.get(k, 0)}
    assert not added, added
    assert closure.one_round
    # what `check` prints: the proved remedy, with its words beside it
    ctx = Context(facts=facts, plan=plan, network=False)
    from envdoctor.checks.engine import run_rules

    shown = [f for f in prove(facts, plan, run_rules(ctx).findings, rerun) if f.rule == rule]
    assert shown and shown[0].remedy is not None
    return closure


def test_mem101_fix_sets_config_keys_that_fit(model_dir):
    cfg = {
        "model_name_or_path": model_dir(QWEN25_15B),
        "per_device_train_batch_size": 16,
        "num_generations": 8,
        "max_completion_length": 1024,
        "gradient_checkpointing": False,
        "model_init_kwargs": {"dtype": "bfloat16"},
    }
    closure = _fixed(snapshot(n_gpus=1, model=A100_40), cfg, ONE, "MEM101")
    assert set(closure.changes.config_set) <= {
        "gradient_checkpointing",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "max_completion_length",
    }


def test_mem102_fix_gives_headroom(model_dir):
    cfg = {
        "model_name_or_path": model_dir(QWEN25_15B),
        "per_device_train_batch_size": 8,
        "max_prompt_length": 128,
        "max_completion_length": 448,
        "gradient_checkpointing": False,
    }
    closure = _fixed(snapshot(n_gpus=1, model=A100_40), cfg, ONE, "MEM102")
    assert "MEM102" not in [f.rule for f in closure.after]


def test_mem103_server_fix_edits_the_server_line(model_dir):
    cfg = {
        "model_name_or_path": model_dir(LLAMA3_8B),
        "use_vllm": True,
        "vllm_mode": "server",
        "gradient_checkpointing": True,
        "use_peft": True,
    }
    launch = (
        "CUDA_VISIBLE_DEVICES=0 torchrun --nproc_per_node 1 train.py\n"
        "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m --gpu_memory_utilization 0.25 "
        "--max_model_len 65536"
    )
    closure = _fixed(snapshot(n_gpus=2, model=A100_40), cfg, launch, "MEM103")
    assert closure.changes.launch and any("vllm-serve" in x for x in closure.changes.launch)


def _colocate(model: str, **cfg) -> dict:
    return {
        "model_name_or_path": model,
        "use_vllm": True,
        "vllm_mode": "colocate",
        "gradient_checkpointing": True,
        "model_init_kwargs": {"dtype": "bfloat16"},
        **cfg,
    }


def test_mem105_fix_sets_the_models_length(model_dir):
    cfg = _colocate(model_dir(QWEN25_05B), vllm_max_model_length=65536, max_completion_length=1024)
    closure = _fixed(snapshot(n_gpus=1, model=H100), cfg, ONE, "MEM105")
    assert closure.changes.config_set["vllm_max_model_length"] == 32768


def test_mem106_fix_raises_the_length(model_dir):
    cfg = _colocate(model_dir(QWEN25_05B), vllm_max_model_length=1024, max_completion_length=1024)
    closure = _fixed(snapshot(n_gpus=1, model=H100), cfg, ONE, "MEM106")
    assert closure.changes.config_set["vllm_max_model_length"] > 1024


def test_mem101_without_a_config_edit_says_so_in_words(model_dir):
    """Full fp32 7B on one 40 GB GPU: no GRPO config edit fits it; the words (ZeRO-3, offload,
    bf16 weights) stay, said not machine-applicable; nothing unproved is printed as a fix."""
    facts = from_dict(snapshot(n_gpus=1, model=A100_40), "t")
    from tests.memory.configs import QWEN25_7B

    plan = build_plan(config_dict={"model_name_or_path": model_dir(QWEN25_7B)}, launch=ONE, live=False)
    ctx = Context(facts=facts, plan=plan, network=False)
    from envdoctor.checks.engine import run_rules

    [f] = [f for f in prove(facts, plan, run_rules(ctx).findings, Rerun()) if f.rule == "MEM101"]
    assert "not machine-applicable" in f.fix
