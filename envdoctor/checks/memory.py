"""Rules on GPU memory: room for vLLM's reservation, busy training GPUs, colocate budgets."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.layout import launch_remedy, with_option
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.facts.gpus import is_vllm_process
from envdoctor.facts.interface import Gpu, GpuProcess
from envdoctor.findings import Remedy
from envdoctor.knowledge import release_said
from envdoctor.plan.interface import COMPUTED
from envdoctor.plan.values import as_bool


def _holders(gpu: Gpu, exclude: Collection[int] = frozenset()) -> str:
    procs = [p for p in gpu.processes if p.pid not in exclude]
    if not procs:
        return "no process listed by NVML"
    return ", ".join(
        f"pid {p.pid} {p.name.split(' ')[0] or '?'} ({p.used_mib if p.used_mib is not None else '?'} MiB)"
        for p in procs
    )


def _util(ctx: Context, default: float) -> float | None:
    """vllm_gpu_memory_utilization as the run sets it (``default``: TRL's); None where the
    training script computes it (no share to judge)."""
    value = ctx.value("vllm_gpu_memory_utilization", default)
    if value is COMPUTED:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _fraction(value: object) -> float | None:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return out if 0 < out <= 1 else None


def server_default(ctx: Context, launcher: str | None) -> tuple[float, str]:
    """What a server reserves when its line does not say (rules/knowledge/vllm.yaml)."""
    table = ctx.kb.vllm.get("gpu_memory_utilization_default") or {}
    if launcher == "vllm-serve":
        vllm = ctx.version("vllm")
        for row in table.get("vllm_serve") or []:
            if versions.satisfies(vllm, str(row.get("vllm", ""))):
                return float(row["value"]), f"{release_said('vllm', vllm, ctx.kb)}'s default"
        return float(table.get("unknown", 0.9)), "vLLM's default (assumed)"
    return float(table.get("trl_vllm_serve", 0.9)), "trl vllm-serve's default"


#: below this fraction a remedy does not lower vLLM's reservation: it would hardly hold a model
MIN_FRACTION = 0.1
COLOCATE_DEFAULT = 0.3  # GRPOConfig.vllm_gpu_memory_utilization since colocate exists (TRL 0.18)


def generation_util(ctx: Context) -> tuple[float | None, str, bool]:
    """``(fraction, where it comes from, set on the server line)`` for the generation GPUs; the
    fraction None where the training script computes it."""
    if ctx.layout.generation_mode != "server":
        colocate = ctx.layout.generation_mode == "colocate"
        util = _util(ctx, COLOCATE_DEFAULT if colocate else 0.9)
        said = (
            "vllm_gpu_memory_utilization"
            if "vllm_gpu_memory_utilization" in ctx.config
            else "vllm_gpu_memory_utilization (TRL's default)"
        )
        return util, said, False
    launch = ctx.plan.server
    if launch is not None:
        value = _fraction(launch.options.get("gpu_memory_utilization"))
        if value is not None:
            return value, "the server line's --gpu_memory_utilization", True
    util, said = server_default(ctx, launch.launcher if launch else None)
    return util, said, False


def _server_processes(ctx: Context, gpu: Gpu) -> list[GpuProcess]:
    pid = ctx.layout.server.pid if ctx.layout.server else None
    return [p for p in gpu.processes if p.pid == pid or is_vllm_process(p.name)]


def _listed(procs: list[GpuProcess]) -> str:
    return ", ".join(
        f"pid {p.pid} {p.name.split(' ')[0] or '?'}{f' ({p.used_mib} MiB)' if p.used_mib is not None else ''}"
        for p in procs
    )


def short_of_reservation(gpu: Gpu, util: float) -> bool:
    """vLLM refuses to start when the GPU's free memory is below ``util`` × total."""
    total, free = gpu.memory_total_mib, gpu.free_mib
    return total is not None and free is not None and free < int(util * total)


@rule("MEM001", needs=("gpus", "vllm"))
def generation_gpu_memory_short(ctx: Context) -> Iterator[Hit]:
    from envdoctor.checks.net import server_health  # the network code loads only for a vLLM run

    lay = ctx.layout
    if lay.generation_mode not in ("legacy", "server", "colocate"):
        return
    util, said, on_line = generation_util(ctx)
    if util is None:
        return  # the script computes vLLM's share: no reservation to compare with
    health = server_health(ctx) if lay.generation_mode == "server" else None
    colocate = lay.generation_mode == "colocate"
    for idx in lay.training if colocate else lay.generation:
        gpu = ctx.facts.gpu(idx)
        if not gpu:
            continue
        mine = _server_processes(ctx, gpu) if lay.generation_mode == "server" else []
        if mine and (health is None or health.ok):
            answered = f"; it answers at {health.url}" if health is not None else ""
            yield hit(
                f"the vLLM server is already up on GPU {idx} ({_listed(mine)}){answered}: "
                "the memory it holds is its own reservation, so no free memory is needed "
                "for a second one",
                severity="info",
                gpu=idx,
                fix="nothing to free: the trainer connects to this server (to change its "
                "options, stop it and start it again)",
                processes=[p.pid for p in mine],
            )
            continue
        total, free = gpu.memory_total_mib, gpu.free_mib
        if total is None or free is None or not short_of_reservation(gpu, util):
            continue
        need = int(util * total)
        fits = max(math.floor((free / total - 0.02) * 100) / 100, 0)
        remedy = None
        if lay.generation_mode == "server":
            lower = (
                f"start the server with a fraction that fits: "
                f"{with_option(ctx.plan.server, 'gpu_memory_utilization', f'{fits:.2f}')}"
                if ctx.plan.server is not None
                else f"start the server with --gpu_memory_utilization {fits:.2f}"
            )
            if ctx.plan.server is not None and fits >= MIN_FRACTION:
                line = with_option(ctx.plan.server, "gpu_memory_utilization", f"{fits:.2f}")
                remedy = launch_remedy(ctx, line, lower, server=True)
        else:
            lower = f"lower vllm_gpu_memory_utilization to {fits:.2f}"
            if fits >= MIN_FRACTION:
                remedy = Remedy(config_set={"vllm_gpu_memory_utilization": fits}, fix=lower)
        note = (
            f" ({_listed(mine)} is a vLLM process, but no server answers at {health.url}: "
            "if it is your server still starting, wait for it; otherwise it is another "
            "job's)"
            if mine and health is not None
            else ""
        )
        role = "training and colocated vLLM" if colocate else "for vLLM"
        yield hit(
            f"GPU {idx} ({role}) has {gpu.free_mib} MiB free, but vLLM will reserve "
            f"{said} {util} × {gpu.memory_total_mib} MiB = {need} MiB: "
            f"the KV-cache allocation fails at start. Held by: {_holders(gpu)}{note}",
            fix=f"free GPU {idx} (stop those processes), or {lower}",
            remedy=remedy,
            by_hand=f"free GPU {idx} (stop those processes)",
            gpu=idx,
            free_mib=gpu.free_mib,
            need_mib=need,
            utilization=util,
            utilization_from_server_line=on_line,
            processes=[p.pid for p in gpu.processes],
        )


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
            yield hit(
                f"training GPU {idx} is already in use: {_holders(gpu, {server_pid or -1})}",
                fix=f"stop those processes or train on another GPU (nvidia-smi -i {idx})",
                severity="warning",
                gpu=idx,
                processes=[p.pid for p in others],
            )


def _colocate_budget_remedies(util: float) -> list[Remedy]:
    out = [Remedy(config_set={"vllm_enable_sleep_mode": True}, fix="set vllm_enable_sleep_mode: true")]
    if util > COLOCATE_DEFAULT:
        out.insert(
            0,
            Remedy(
                config_set={"vllm_gpu_memory_utilization": COLOCATE_DEFAULT},
                fix=f"set vllm_gpu_memory_utilization: {COLOCATE_DEFAULT}",
            ),
        )
    return out


@rule("MEM003", needs=("gpus", "vllm", "trl-layout"))
def colocate_memory_budget(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    if lay.generation_mode != "colocate":
        return
    util = _util(ctx, COLOCATE_DEFAULT)
    if util is None:
        return  # the script computes vLLM's share
    sleeps = as_bool(ctx.plan.config.get("vllm_enable_sleep_mode", False)) is True
    for idx in lay.training:
        gpu = ctx.facts.gpu(idx)
        if not gpu or not gpu.memory_total_mib or gpu.memory_used_mib is None:
            continue
        if short_of_reservation(gpu, util):
            continue  # vLLM will not even start there: MEM001 says so
        used = gpu.memory_used_mib / gpu.memory_total_mib
        if sleeps and util + used <= 0.95:
            continue  # vLLM sleeps while the trainer steps (its weights and cache released)
        if util + used > 0.95 or util > 0.7:
            left = (1 - util - used) * gpu.memory_total_mib
            yield hit(
                f"colocate mode on GPU {idx}: vLLM takes vllm_gpu_memory_utilization {util}"
                f" and {used:.0%} is already used, leaving ~{max(int(left), 0)} MiB for "
                "the model, gradients and optimizer",
                severity="warning" if util + used <= 0.95 else None,
                fix="lower vllm_gpu_memory_utilization (0.3 is a common start) or enable "
                "vllm_enable_sleep_mode",
                remedy=_colocate_budget_remedies(util),
                gpu=idx,
                utilization=util,
            )
