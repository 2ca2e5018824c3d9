"""Out of memory where other processes hold the GPU, in a run that colocates its inference engine
with training in processes of its own (verl's hybrid engine, OpenRLHF's / SkyRL's colocated vLLM
actors): those processes are the job's own engines, not another tenant. "Stop them" (MEM002)
would stop the job; the cause is the engines' share while training allocates (TRI001): sleep them,
or lower their gpu_memory_utilization.

Issue 36, held-out set 24 (read after it was measured): SkyRL's colocated FSDP + vLLM tests
(NovaSky-AI/SkyRL#1221) drew MEM002 "stop them" errors."""

from __future__ import annotations

from tests.triage.helpers import findings, scan_bytes

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 260.00 MiB. GPU 0 has a total "
    "capacity of 21.95 GiB of which 202.62 MiB is free. Process 136096 has 18.46 GiB memory in use. "
    "Including non-PyTorch memory, this process has 3.28 GiB memory in use. Of the allocated memory "
    "2.86 GiB is allocated by PyTorch, and 112.47 MiB is reserved by PyTorch but unallocated.\n"
)
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/app/skyrl/workers/fsdp_worker.py", line 88, in init_model\n'
    "    model = model.to(device)\n"
)


def _oom(log: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f.rule in ("MEM002", "TRI001", "MEM001")]


def test_colocated_engine_processes_are_the_jobs_own() -> None:
    log = (
        "FAILED tests/gpu/test_policy_local_engines_e2e.py::test_e2e[colocate_gloo_fsdp_vllm] - "
        "ray.exceptions.RayTaskError(OutOfMemoryError)\n" + TRACE + OOM
    )
    got = _oom(log)
    assert [f.rule for f in got] == ["TRI001"]
    assert "this job's own engine processes" in got[0].message
    assert "sleep" in got[0].fix and "gpu_memory_utilization" in got[0].fix
    assert "stop them" not in got[0].fix


def test_verls_hybrid_engine_is_colocation() -> None:
    log = "python3 -m verl.trainer.main_ppo actor_rollout_ref.hybrid_engine=True\n" + TRACE + OOM
    assert [f.rule for f in _oom(log)] == ["TRI001"]


def test_another_tenant_is_still_told_to_stop() -> None:
    assert [f.rule for f in _oom(TRACE + OOM)] == ["MEM002"]


def test_colocation_of_something_else_is_not_an_engine() -> None:
    log = "colocate the reward model with the actor (no inference engine)\n" + TRACE + OOM
    assert [f.rule for f in _oom(log)] == ["MEM002"]


def test_a_colocated_test_id_and_the_engine_on_other_lines_are_colocation() -> None:
    """Set 24's b004: the test's id names the colocation (``[colocate_fsdp2]``) and vLLM's own frames
    on other lines name the engine: the other process is the job's engine, not another tenant."""
    engine = (
        '  File "/root/.cache/uv/lib/python3.12/site-packages/vllm/entrypoints/utils.py", line 49, '
        "in generate\n"
    )
    log = (
        engine + "FAILED tests/gpu/test_save_weights.py::test_save_weights_then_inference[colocate_fsdp2] - "
        "ray.exceptions.RayTaskError(OutOfMemoryError)\n" + TRACE + OOM
    )
    assert [f.rule for f in _oom(log)] == ["TRI001"]
    # quiet: the engine named with no colocation, or a colocation with no engine anywhere
    assert [f.rule for f in _oom(engine + TRACE + OOM)] == ["MEM002"]
    alone = "FAILED tests/gpu/test_x.py::test_x[colocate_fsdp2] - RayTaskError(OutOfMemoryError)\n"
    assert [f.rule for f in _oom(alone + TRACE + OOM)] == ["MEM002"]
