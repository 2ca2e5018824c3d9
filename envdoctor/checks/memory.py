"""Rules on GPU memory: room for vLLM's reservation, busy training GPUs, colocate budgets."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.facts.interface import Gpu


def _holders(gpu: Gpu, exclude: set[int] = frozenset()) -> str:
    procs = [p for p in gpu.processes if p.pid not in exclude]
    if not procs:
        return "no process listed by NVML"
    return ", ".join(f"pid {p.pid} {p.name.split(' ')[0] or '?'} "
                     f"({p.used_mib if p.used_mib is not None else '?'} MiB)" for p in procs)


def _util(ctx: Context, default: float) -> float:
    value = ctx.config.get("vllm_gpu_memory_utilization", default)
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


@rule("MEM001", needs=("gpus", "vllm"))
def generation_memory(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    if lay.generation_mode not in ("legacy", "server"):
        return
    if lay.server is not None and lay.server.source == "nvml":
        return  # the server is already running and holds its memory
    util = _util(ctx, 0.9)
    for idx in lay.generation:
        gpu = ctx.facts.gpu(idx)
        if not gpu or gpu.memory_total_mib is None or gpu.free_mib is None:
            continue
        need = int(util * gpu.memory_total_mib)
        if gpu.free_mib < need:
            fits = max(gpu.free_mib / gpu.memory_total_mib - 0.02, 0)
            yield hit(f"GPU {idx} (for vLLM) has {gpu.free_mib} MiB free, but vLLM will reserve "
                      f"gpu_memory_utilization {util} × {gpu.memory_total_mib} MiB = {need} MiB: "
                      f"the KV-cache allocation fails at start. Held by: {_holders(gpu)}",
                      fix=f"free GPU {idx} (stop those processes), or lower "
                      f"vllm_gpu_memory_utilization to {fits:.2f}",
                      gpu=idx, free_mib=gpu.free_mib, need_mib=need,
                      processes=[p.pid for p in gpu.processes])


@rule("MEM002", needs=("gpus",))
def training_gpu_busy(ctx: Context) -> Iterator[Hit]:
    server_pid = ctx.layout.server.pid if ctx.layout.server else None
    for idx in ctx.layout.training:
        gpu = ctx.facts.gpu(idx)
        if gpu is None:
            continue
        others = [p for p in gpu.processes if p.pid != server_pid]
        used = sum(p.used_mib or 0 for p in others)
        if others and (used > 1024 or not any(p.used_mib for p in others)):
            yield hit(f"training GPU {idx} is already in use: {_holders(gpu, {server_pid or -1})}",
                      fix=f"stop those processes or train on another GPU (nvidia-smi -i {idx})",
                      severity="warning", gpu=idx, processes=[p.pid for p in others])


@rule("MEM003", needs=("gpus", "vllm"))
def colocate_budget(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    if lay.generation_mode != "colocate":
        return
    util = _util(ctx, 0.3)
    for idx in lay.training:
        gpu = ctx.facts.gpu(idx)
        if not gpu or not gpu.memory_total_mib or gpu.memory_used_mib is None:
            continue
        used = gpu.memory_used_mib / gpu.memory_total_mib
        if util + used > 0.95 or util > 0.7:
            left = (1 - util - used) * gpu.memory_total_mib
            yield hit(f"colocate mode on GPU {idx}: vLLM takes vllm_gpu_memory_utilization {util}"
                      f" and {used:.0%} is already used, leaving ~{max(int(left), 0)} MiB for "
                      "the model, gradients and optimizer", severity="warning" if util + used
                      <= 0.95 else None,
                      fix="lower vllm_gpu_memory_utilization (0.3 is a common start) or enable "
                      "vllm_enable_sleep_mode", gpu=idx, utilization=util)
