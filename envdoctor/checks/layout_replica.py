"""LAY003's memory judgement where TRL lets transformers.Trainer wrap the model in nn.DataParallel
silently and one of the GPUs the process sees is reserved for vLLM (legacy vllm_device, or a
server's GPU): does a replica fit beside vLLM's share of that GPU?

nn.DataParallel copies the model to every visible GPU on each forward (``replicate``), scatters
the batch (Trainer's batch is per_device_train_batch_size × n_gpu, so each replica gets
per_device_train_batch_size) and reduces the replicas' gradients onto GPU 0, where the optimizer
states stay. A replica on the vLLM GPU therefore holds the weights, one micro-batch's activations
and log-prob logits, then its gradients until they are reduced: the trainer row of the memory
plan (envdoctor.plan.memory) without the optimizer states, the reference model and the step's
temporaries. vLLM holds its ``gpu_memory_utilization`` share of the GPU from start (TRL's default
0.9 before 0.18); the replica gets the rest.

Severity by evidence (rules/layout.yaml, LAY003):
- error: the plan says a replica needs more than vLLM's share leaves, even before the caching
  allocator's fragmentation; or no plan can be made (no model size, no GPU size) and the share
  is vLLM's default 0.9 or above LAY006's bound for a deliberate share (0.5): vLLM leaves the
  replica a tenth of the GPU (field reports 1-2);
- warning: the replica fits with less than a tenth of the GPU to spare (completions of varying
  length and fragmentation push it over, as field report 1's memory grew over the run); or the
  share is set at 0.5 or less and the model's or the GPU's size is not known;
- info: the plan shows the replica fits with room to spare (still: the batch is multiplied by
  n_gpu and the GPU's time is shared with generation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envdoctor.checks.context import Context
from envdoctor.units import size_text

if TYPE_CHECKING:
    from envdoctor.plan.memory.knobs import Knobs
    from envdoctor.plan.memory.parts import Part
    from envdoctor.plan.memory.shape import ModelShape

#: a vLLM share of the GPU set at most this leaves training at least as much as vLLM takes (TRL's
#: colocate mode shares every GPU at 0.3 by default): the user shares the GPU on purpose (LAY006)
DELIBERATE_SHARE = 0.5
#: vLLM's gpu_memory_utilization when the run does not set it (TRL < 0.18's vllm_gpu_memory_utilization,
#: trl vllm-serve's --gpu_memory_utilization)
DEFAULT_SHARE = 0.9
#: what a replica holds of a rank's plan: the optimizer states, the reference model, DDP's
#: buckets and the optimizer step's temporaries stay on GPU 0
_REPLICA_FORWARD = ("activations", "autocast weight copies", "log-prob logits")
_REPLICA_STEADY = ("weights", "LoRA adapters")


def set_share(ctx: Context) -> tuple[float | None, str]:
    """The vLLM share of its GPU the run sets (legacy ``vllm_gpu_memory_utilization``, the
    server line's ``--gpu_memory_utilization``) and the key said; None where unset or not a
    fraction in (0, 1]."""
    if ctx.layout.generation_mode == "legacy":
        value, said = ctx.config.get("vllm_gpu_memory_utilization"), "vllm_gpu_memory_utilization"
    else:
        server = ctx.plan.server
        value = server.options.get("gpu_memory_utilization") if server is not None else None
        said = "the server line's --gpu_memory_utilization"
    try:
        util = float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        util = None
    return (util if util is not None and 0 < util <= 1 else None), said


@dataclass
class ReplicaFit:
    severity: str  # "error", "warning" or "info"
    text: str  # the verdict, said after the outcome in LAY003's message
    evidence: dict[str, Any] = field(default_factory=dict)


def _shape(ctx: Context) -> tuple[ModelShape | None, str]:
    """The model's shape as the memory plan resolves it (--model-params, config.json), else from
    the size its name states (``Llama-3.2-1B``); and where it came from ("" for the plan's own)."""
    from envdoctor.plan.memory.planner import _resolved
    from envdoctor.plan.memory.shape import parse_count, shape_from_count
    from envdoctor.plan.model_name import model_name, size_in_name

    shape, _ = _resolved(ctx)
    if shape is not None:
        return shape, ""
    name = model_name(ctx)
    size = size_in_name(name) if name else None
    if not size:
        return None, ""
    return shape_from_count(parse_count(size)), f"the name {name}: {size}"


def replica_parts(shape: ModelShape, k: Knobs) -> tuple[int, int, list[Part]]:
    """What one DataParallel replica holds at its peak: PyTorch's allocations (weights, and the
    larger of the forward's activations and the replica's gradients), the same with the
    allocator's fragmentation, and the parts counted."""
    from envdoctor.plan.memory.parts import FRAGMENTATION, trainer_parts

    parts = trainer_parts(shape, k.replace(strategy="ddp", world=1))
    steady = [p for p in parts if p.name in _REPLICA_STEADY]
    forward = [p for p in parts if p.name in _REPLICA_FORWARD]
    grads = [p for p in parts if p.name == "gradients"]
    fwd, back = sum(p.bytes for p in forward), sum(p.bytes for p in grads)
    peak = forward if fwd >= back else grads
    counted = steady + peak
    alloc = sum(p.bytes for p in counted)
    return alloc, int(alloc * (1 + FRAGMENTATION)), counted


def replica_fit(ctx: Context, gen: list[int]) -> ReplicaFit:
    """LAY003's severity and verdict for a silent nn.DataParallel over the GPUs ``gen`` reserved
    for vLLM (see the module's docstring)."""
    from envdoctor.plan.memory.parts import CONTEXT, THIN
    from envdoctor.plan.memory.planner import _capacity, build, for_context, server_row

    util, said = set_share(ctx)
    share = util if util is not None else DEFAULT_SHARE
    shape, source = _shape(ctx)
    plan = (for_context(ctx) if not source else build(ctx, shape)) if shape is not None else None
    rows = []
    if plan is not None and shape is not None:
        for gpu in gen:
            row = next((r for r in plan.gpus if r.gpu == gpu and r.role == "vLLM"), None)
            if row is None:
                row = server_row(ctx, shape, plan.knobs, gpu, _capacity(ctx, gpu))
            if row.capacity:
                rows.append(row)
    if plan is None or shape is None or not rows:
        return _unknown(ctx, gen, util, said, "the model's size" if shape is None else "the GPU's memory")
    alloc, total, counted = replica_parts(shape, plan.knobs)
    if ctx.layout.generation_mode != "legacy":
        total += CONTEXT  # the trainer's own CUDA context beside the server's (legacy: vLLM's)
    # the GPU with the least room beside vLLM
    row = min(rows, key=lambda r: (r.capacity or 0) - r.total)
    cap = row.capacity or 0
    room = cap - row.total
    what = ", ".join(f"{p.name} {size_text(p.bytes)}" for p in sorted(counted, key=lambda p: -p.bytes))
    vllm = (
        f"vLLM's gpu_memory_utilization {row.vllm_util or share:g} of GPU {row.gpu} "
        f"({size_text(row.total)} with its CUDA context, of {size_text(cap)}) leaves {size_text(room)}"
    )
    size = f"; model size from {source}" if source else ""
    evidence = {
        "replica_bytes": total,
        "replica_allocated_bytes": alloc,
        "room_bytes": room,
        "vllm_share": row.vllm_util or share,
        "gpu": row.gpu,
    }
    if alloc > room:
        return ReplicaFit(
            "error",
            f"{vllm}, and a replica needs ~{size_text(alloc)} before fragmentation ({what}; "
            f"per_device_train_batch_size {plan.knobs.batch}{size}): it runs out of memory there "
            "in the first steps",
            evidence,
        )
    if total > room - THIN * cap:
        spare = (
            f"short by {size_text(total - room)}"
            if total > room
            else f"only {size_text(room - total)} to spare"
        )
        return ReplicaFit(
            "warning",
            f"{vllm}, and a replica needs ~{size_text(total)} at its peak ({what}; "
            f"per_device_train_batch_size {plan.knobs.batch}{size}): "
            f"{spare}, so longer completions and fragmentation push it out of memory (field reports 1-2: "
            "memory grew there until it did)",
            evidence,
        )
    return ReplicaFit(
        "info",
        f"{vllm}, and a replica needs ~{size_text(total)} at its peak ({what}; "
        f"per_device_train_batch_size {plan.knobs.batch}{size}): it fits, by the memory plan",
        evidence,
    )


#: what lets envdoctor judge the replica, by what it lacks
_HOW = {
    "the model's size": "a model_name_or_path whose config.json is on this machine, or whose name "
    "states its size, lets the memory plan judge it",
    "the GPU's memory": "run envdoctor on the machine, or give a snapshot of its GPUs (--facts)",
}


def _unknown(ctx: Context, gen: list[int], util: float | None, said: str, missing: str) -> ReplicaFit:
    gpus = ", ".join(map(str, gen))
    evidence: dict[str, Any] = {"vllm_share": util if util is not None else DEFAULT_SHARE}
    if util is not None and util <= DELIBERATE_SHARE:
        return ReplicaFit(
            "warning",
            f"{said} is {util:g}, which leaves {1 - util:.0%} of GPU {gpus} beside vLLM (a share "
            f"set on purpose, as LAY006 takes it), but {missing} is not known, so whether a replica "
            f"and its activations fit there is not judged ({_HOW[missing]})",
            evidence,
        )
    took = (
        f"{said} {util:g}" if util is not None else f"gpu_memory_utilization {DEFAULT_SHARE:g} (the default)"
    )
    return ReplicaFit(
        "error",
        f"vLLM takes {took} of GPU {gpus} at start, leaving the replicas and activations "
        f"{1 - (util if util is not None else DEFAULT_SHARE):.0%} of it: they run out of memory "
        "there as training goes on (field reports 1-2)",
        evidence,
    )
