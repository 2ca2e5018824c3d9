"""Leaving one GPU for legacy vLLM (LAY002, LAY006) with a single training rank: under accelerate
(or python) one rank sets up no distributed environment, so the process sees every GPU and
transformers wraps the model in nn.DataParallel (LAY003, measured in
docs/validation/dataparallel-launchers-h200x2.md). The fix is LAY003's own one-rank line."""

from __future__ import annotations

from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun
from envdoctor.remedy.closure import prove
from tests.conftest import LEGACY, snapshot

CONFIG = {
    "use_vllm": True,
    "vllm_device": "cuda:1",
    "vllm_gpu_memory_utilization": 0.7,
    "num_generations": 4,
    "per_device_train_batch_size": 4,
}


def _fixed(launch: str, rule: str) -> tuple[list, list]:
    facts = from_dict(snapshot(2, packages=LEGACY), "test")
    plan = build_plan(launch=launch, config_dict=CONFIG, live=False)
    rerun = Rerun()
    before = prove(facts, plan, rerun(facts, plan), rerun)
    return [f for f in before if f.rule == rule], before


def test_one_rank_left_under_accelerate_is_torchruns_single_rank_and_adds_nothing():
    (lay006,), _ = _fixed("accelerate launch train.py --lr 1e-6", "LAY006")
    lines = [r.launch[-1] for r in (lay006.remedy, *lay006.alternatives) if r.launch]
    assert lines and all(line == "torchrun --nproc_per_node 1 train.py --lr 1e-6" for line in lines)
    assert "accelerate launch --num_processes 1" not in lay006.fix


def test_an_accelerate_deepspeed_launch_is_kept_with_its_launcher():
    (lay006,), _ = _fixed("accelerate launch --use_deepspeed --num_processes 2 train.py", "LAY006")
    lines = [r.launch[-1] for r in (lay006.remedy, *lay006.alternatives) if r.launch]
    assert lines and all(line.startswith("accelerate launch --use_deepspeed") for line in lines)


def test_no_gpu_left_for_vllm_with_two_accelerate_ranks_leaves_torchruns_single_rank():
    """LAY002 on two GPUs under accelerate (was "accelerate launch --num_processes 1 t.py": the trap)."""
    from tests.conftest import findings

    cfg = {"use_vllm": True, "vllm_device": "auto", "num_generations": 2, "per_device_train_batch_size": 2}
    launch = "accelerate launch --num_processes 2 t.py"
    (lay002,) = [
        f for f in findings(snapshot(2, packages=LEGACY), config=cfg, launch=launch) if f.rule == "LAY002"
    ]
    assert lay002.fix == "leave one GPU for vLLM: torchrun --nproc_per_node 1 t.py"
