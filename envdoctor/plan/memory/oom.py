"""Explain an out-of-memory inside the optimizer step with the memory plan (used by triage).

An OOM raised from ``optimizer.step()`` (torch's AdamW, its foreach / fused kernels, an 8-bit
bitsandbytes optimizer) happens when the step's states are created or updated. If the plan's
steady parts — weights, gradients, optimizer states, DDP buckets, step temporaries, a reference
model — make up most of what PyTorch had allocated, those parts are the story, not fragmentation.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from envdoctor.units import GiB, MiB, billions, size_text

if TYPE_CHECKING:
    from envdoctor.plan.memory.planner import RuleContext

_STEP = re.compile(
    r"torch/optim/(?:adamw?|optimizer|sgd)\.py|_(?:multi_tensor|fused|single_tensor)"
    r"_adamw?\b|optimizer\.step\(|bitsandbytes/optim|deepspeed/runtime/zero/stage"
)
_STEADY = (
    "weights",
    "gradients",
    "optimizer states",
    "DDP gradient buckets",
    "optimizer step temporaries",
    "reference model",
    "LoRA adapters",
)


def in_optimizer_step(context: list[str]) -> bool:
    return any(_STEP.search(line.replace("\\", "/")) for line in context)


def explain_optimizer_oom(
    ctx: RuleContext, allocated_mib: float | None, total_mib: float | None, context: list[str]
) -> tuple[str, str, dict[str, Any]] | None:
    """(why, fix, evidence) when the plan's steady parts explain an OOM in the optimizer step."""
    if not context or not in_optimizer_step(context):
        return None
    from envdoctor.plan.memory.planner import for_context

    try:
        plan = for_context(ctx)
    except Exception:  # noqa: BLE001 - triage never fails on the plan (bad --model-params...)
        return None
    if plan is None or not plan.gpus:
        return None
    row = plan.gpus[0]
    if row.capacity is None and total_mib:
        from envdoctor.plan.memory.planner import trainer_row

        row = trainer_row(plan.model, plan.knobs, row.gpu, int(total_mib * MiB))
    sizes = {name: sum(p.bytes for p in row.parts if p.name == name) for name in _STEADY}
    steady = sum(sizes.values())
    held = (allocated_mib or total_mib or 0) * MiB
    if not held or steady < 0.75 * held:
        return None
    listed = ", ".join(f"{name} {size_text(v)}" for name, v in sizes.items() if v)
    why = (
        f"it failed in the optimizer step, where the memory plan of {plan.model.name} "
        f"({billions(plan.model.total_params())} parameters, {plan.knobs.strategy} × "
        f"{plan.knobs.world}) holds {listed} = {size_text(steady)} of the "
        f"{size_text(held)} PyTorch had allocated: the optimizer states and gradients do "
        "not fit beside the weights, which expandable segments cannot change"
    )
    fixes = [f"{f.text} (saves ~{size_text(f.saves)})" for f in plan.fixes(row)]
    fix = "; ".join(fixes) or "shard the optimizer states (DeepSpeed ZeRO / FSDP) or use LoRA"
    return (
        why,
        fix,
        {
            "plan_steady_gib": round(steady / GiB, 2),
            "plan_parts_gib": {k: round(v / GiB, 2) for k, v in sizes.items() if v},
        },
    )
