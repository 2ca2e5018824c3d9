"""Rules on the memory plan: will each GPU of this GRPO run hold its peak (envdoctor.plan.memory)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from envdoctor.checks.context import Context
from envdoctor.checks.memory_remedy import (
    colocate_length_key,
    trainer_remedies,
    vllm_length_remedy,
    vllm_util_remedy,
)
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.plan.layout import trainer_env
from envdoctor.units import model_label, size_text

if TYPE_CHECKING:
    from envdoctor.plan.memory.parts import GpuPlan
    from envdoctor.plan.memory.planner import MemoryPlan

# Every rule here needs a model (the engine skips them without one), so the memory plan
# (envdoctor.plan.memory) is imported inside the functions: a check that names no model never
# loads it.


def _where(group: list[GpuPlan]) -> str:
    from envdoctor.plan.memory.parts import each_role, gpus_text

    return f"{gpus_text([r.gpu for r in group])} ({each_role(group[0].role, len(group))})"


def _biggest(row: GpuPlan, n: int = 4) -> str:
    parts = sorted((p for p in row.parts if p.at_peak), key=lambda p: -p.bytes)[:n]
    return ", ".join(f"{p.name} {size_text(p.bytes)}" for p in parts)


def _fix_text(plan: MemoryPlan, row: GpuPlan, deficit: int) -> str:
    from envdoctor.plan.memory.planner import smallest_fix_set

    fixes = plan.fixes(row)
    if not fixes:
        return ""
    items = [
        f"{f.text} (saves ~{size_text(f.saves)}{', enough alone' if f.saves >= deficit else ''})"
        for f in fixes
    ]
    if not any(f.saves >= deficit for f in fixes):
        found = smallest_fix_set(plan.model, plan.knobs, row)
        if found is not None and len(found[0]) > 1:
            items.append(
                f"together: {' + '.join(found[0])} (peak ~{size_text(found[1].total)} of "
                f"{size_text(row.capacity or 0)})"
            )
    return "; ".join(items)


def _by_hand(text: str) -> str:
    """The plan's fixes in words, kept beside the proved config edits (ZeRO-3, offload and a
    larger GPU are no GRPO config edit: envdoctor cannot apply them)."""
    return f"by hand (not machine-applicable where no config key does it): {text}" if text else ""


def _assumed_evidence(plan: MemoryPlan) -> dict[str, Any]:
    """The message's assumptions tail as evidence (plan-memory lists them once, above)."""
    note = _assumed(plan)
    return {"assumed_note": note} if note else {}


def _assumed(plan: MemoryPlan) -> str:
    notes = plan.model.assumed + [
        a for a in plan.knobs.assumed if "max_prompt_length" in a or a.startswith("TRL ")
    ]
    k = plan.knobs
    prompt = (
        f" Prompt length {k.prompt_len} from {k.prompt_source}."
        if k.prompt_source not in ("assumed", "max_prompt_length")
        else ""
    )
    return prompt + (f" Assumed: {'; '.join(notes)}." if notes else "")


def _doubt(plan: MemoryPlan) -> float:
    """How far over the GPU the plan must be for an error: 1.0 where the formulas were checked
    on a GPU (one rank; DDP, FSDP full shard and ZeRO-1/2/3 on two; full fine-tuning, LoRA and
    QLoRA; an 8-bit optimizer; a reference model; vLLM colocated at 0.3 and its out-of-memory at
    0.6 and 0.85: docs/memory.md), 1.15 for setups estimated from the papers and code alone
    (FSDP's other strategies, offload)."""
    k = plan.knobs
    checked = k.strategy in ("ddp", "fsdp_full", "zero1", "zero2", "zero3") and not (
        k.offload_params or k.offload_optimizer
    )
    return 1.0 if checked else 1.15


#: where the formulas were checked, PyTorch's own allocations above this share of the GPU with the
#: allocator margin over it did run out of memory: shape s10 on an H100 (docs/memory.md), planned
#: at 96 % allocated and 104 % with the margin, died at 79.12 of 79.18 GiB
FULL_SHARE = 0.95


def _will_not_fit(plan: MemoryPlan, row: GpuPlan) -> bool:
    if not row.capacity:
        return False  # no capacity known: nothing to compare with (such rows are not judged)
    doubt = _doubt(plan)
    torch_part = _torch_part(row)
    if torch_part > row.capacity * doubt:
        return True
    return doubt == 1.0 and row.total > row.capacity and torch_part > FULL_SHARE * row.capacity


def _torch_part(row: GpuPlan) -> int:
    from envdoctor.plan.memory.parts import CONTEXT, allocated

    return (
        allocated(row.parts)
        + CONTEXT
        + sum(p.bytes for p in row.parts if p.name.startswith("vLLM") and p.at_peak)
    )


def _judged(ctx: Context) -> MemoryPlan | None:
    """The memory plan where it can be judged: None where the model does not resolve or the
    training script computes a key the plan reads (planned at TRL's default, not the run's)."""
    from envdoctor.plan.memory.planner import for_context

    plan = for_context(ctx)
    return None if plan is None or plan.knobs.computed else plan


def _rows(ctx: Context, judged: bool = True) -> tuple[MemoryPlan | None, list[GpuPlan]]:
    from envdoctor.plan.memory.planner import for_context

    plan = _judged(ctx) if judged else for_context(ctx)
    if plan is None:
        return None, []
    return plan, [r for r in plan.gpus if r.role != "vLLM" and r.capacity]


@rule("MEM101", needs=("model", "trl-keys"))
def memory_plan_will_not_fit(ctx: Context) -> Iterator[Hit]:
    from envdoctor.plan.memory.parts import same_gpus

    plan, rows = _rows(ctx)
    if plan is None:
        return
    for group in same_gpus(rows):
        row = group[0]
        if not _will_not_fit(plan, row):
            continue
        deficit = row.total - row.capacity
        yield hit(
            f"{_where(group)} needs ~{size_text(row.total)} at its peak but has "
            f"{size_text(row.capacity)}"
            f": {_biggest(row)} ({model_label(plan.model.name, plan.model.total_params())})."
            f" It runs out of memory in the first steps.{_assumed(plan)}",
            fix=_fix_text(plan, row, deficit),
            remedy=trainer_remedies(ctx, plan, row),
            by_hand=_by_hand(_fix_text(plan, row, deficit)),
            **_assumed_evidence(plan),
            gpu=row.gpu,
            gpus=[r.gpu for r in group],
            plan=row.to_dict(),
        )


@rule("MEM102", needs=("model", "trl-keys"))
def memory_plan_headroom_thin(ctx: Context) -> Iterator[Hit]:
    from envdoctor.plan.memory.parts import same_gpus
    from envdoctor.plan.memory.planner import is_thin

    plan, rows = _rows(ctx)
    if plan is None:
        return
    for group in same_gpus(rows):
        row = group[0]
        if _will_not_fit(plan, row) or not (row.total > row.capacity or is_thin(row)):
            continue
        left = row.capacity - row.total
        yield hit(
            f"{_where(group)}: the plan's peak is ~{size_text(row.total)} of {size_text(row.capacity)} "
            f"({'short by ' + size_text(-left) if left < 0 else 'only ' + size_text(left) + ' left'}"
            f", allocator margin included): {_biggest(row)}. Longer completions or "
            f"fragmentation push it over.{_assumed(plan)}",
            fix=_fix_text(plan, row, max(-left, 0) + int(0.1 * row.capacity)),
            remedy=trainer_remedies(ctx, plan, row),
            by_hand=_by_hand(_fix_text(plan, row, max(-left, 0) + int(0.1 * row.capacity))),
            **_assumed_evidence(plan),
            gpu=row.gpu,
            gpus=[r.gpu for r in group],
            plan=row.to_dict(),
        )


@rule("MEM103", needs=("model", "vllm"))
def kv_cache_cannot_hold_max_model_len(ctx: Context) -> Iterator[Hit]:
    from envdoctor.plan.memory.parts import gpus_text, same_gpus

    plan = _judged(ctx)
    if plan is None:
        return
    colocate = plan.knobs.vllm_mode == "colocate"
    len_key = "vllm_max_model_length" if colocate else "--max_model_len"
    util_key = "vllm_gpu_memory_utilization" if colocate else "--gpu_memory_utilization"
    for group in same_gpus(plan.gpus):
        row = group[0]
        if row.kv_need is None or row.kv_free is None or not row.capacity:
            continue
        if row.kv_free >= row.kv_need:
            continue
        per_token = max(plan.model.kv_bytes_per_token_per_gpu(row.vllm_tp), 1)
        fits = max(row.kv_free, 0) // per_token
        util = row.vllm_util or plan.knobs.vllm_util
        needed_util = min((util * row.capacity - row.kv_free + row.kv_need) / row.capacity + 0.02, 0.98)
        what = (
            f"leaves {size_text(row.kv_free)} for the KV cache"
            if row.kv_free > 0
            else f"does not even hold the weights and activations ({size_text(-row.kv_free)} short)"
        )
        fix = f"{len_key} {fits}" if fits >= 1024 else ""
        length_key = (colocate_length_key(ctx) if colocate else len_key) or ""
        remedies: list[Remedy | None] = []
        if fits >= 1024 and length_key:
            remedies.append(vllm_length_remedy(ctx, length_key, int(fits)))
        if needed_util > util and needed_util < 0.98:
            remedies.append(vllm_util_remedy(ctx, util_key, needed_util))
        both = _colocate_conflict(plan, row, needed_util) if colocate else ""
        if both:
            fix = "; ".join(x for x in (fix, both) if x)
        elif needed_util > util and needed_util < 0.98:
            fix += f"{' or ' if fix else ''}{util_key} {needed_util:.2f}"
        yield hit(
            f"vLLM on {gpus_text([r.gpu for r in group])}: gpu_memory_utilization {util} "
            f"× {size_text(row.capacity)} "
            f"{what}, but one sequence of max_model_len {row.max_model_len} needs "
            f"{size_text(row.kv_need)} ({per_token:,} B per token): vLLM refuses to start "
            '("... KV cache is needed, which is larger than the available KV cache '
            'memory").',
            fix=fix or "a GPU with more memory, or a smaller model",
            remedy=[r for r in remedies if r is not None],
            by_hand=_by_hand(fix or "a GPU with more memory, or a smaller model"),
            gpu=row.gpu,
            gpus=[r.gpu for r in group],
            kv_need_bytes=row.kv_need,
            kv_free_bytes=row.kv_free,
            max_model_len_that_fits=fits,
        )


_STEADY = ("weights", "LoRA adapters", "optimizer states", "reference model", "CUDA context", "NCCL buffers")


def _colocate_conflict(plan: MemoryPlan, row: GpuPlan, needed: float) -> str:
    """Where the fraction the KV cache needs leaves the training step too little of the GPU: say
    so and propose what holds both (vLLM tensor parallel across the colocated ranks, sleep mode,
    server mode); "" where raising the fraction is enough."""
    from envdoctor.plan.memory.planner import generations

    k, cap = plan.knobs, row.capacity or 0
    if not cap:
        return ""
    if k.vllm_sleep:  # generating, vLLM's fraction sits beside the trainer's steady parts
        rest = sum(p.bytes for p in row.parts if p.name in _STEADY and p.at_peak)
    else:
        rest = row.total - sum(p.bytes for p in row.parts if p.name.startswith("vLLM") and p.at_peak)
    room = max((cap - rest) / cap, 0)
    if needed <= room:
        return ""
    over = " (the step is over the GPU already: MEM101)" if room < k.vllm_util else ""
    out = [
        f"no vllm_gpu_memory_utilization holds both: the KV cache needs {needed:.2f} of the GPU, "
        f"the training step leaves vLLM at most {room:.2f}{over}"
    ]
    split = [g for g in generations(plan.model, k, row) if g.tp != k.vllm_tp and g.util < needed]
    fitting = [g for g in split if g.trainer_total <= cap]
    if split:
        g = (fitting or sorted(split, key=lambda g: g.util))[0]
        after = "" if fitting else " (over the GPU still: see MEM101's fixes)"
        out.append(
            f"{g.text(k)} (vLLM's weights and KV cache split over {g.tp} colocated ranks; "
            f"the trainer's peak is then ~{size_text(g.trainer_total)}{after})"
        )
    steady = sum(p.bytes for p in row.parts if p.name in _STEADY and p.at_peak)
    if not k.vllm_sleep and steady + needed * cap <= cap:
        out.append(
            f"vllm_enable_sleep_mode: true with vllm_gpu_memory_utilization {needed:.2f} "
            "(vLLM releases its memory while the trainer steps; generating, it needs the "
            "fraction beside the weights and optimizer states, which fit)"
        )
    out.append("vllm_mode: server (trl vllm-serve on GPUs of its own)")
    return "; ".join(out)


@rule("MEM104", needs=("model", "trl-keys"))
def memory_plan(ctx: Context) -> Iterator[Hit]:
    from envdoctor.plan.memory.parts import same_gpus
    from envdoctor.plan.memory.planner import is_thin

    plan, rows = _rows(ctx, judged=False)  # the plan said, at TRL's defaults where computed
    computed = plan.knobs.computed if plan is not None else ()
    for group in same_gpus(rows):
        row = group[0]
        if computed:
            yield hit(
                f"{_where(group)}: peak ~{size_text(row.total)} of {size_text(row.capacity)} planned "
                f"at TRL's defaults for {', '.join(computed)}, which the training script computes: "
                "not judged",
                gpu=row.gpu,
                gpus=[r.gpu for r in group],
                plan=row.to_dict(),
                computed=list(computed),
            )
            continue
        if row.total > row.capacity or is_thin(row):
            continue
        yield hit(
            f"{_where(group)}: peak ~{size_text(row.total)} of {size_text(row.capacity)} "
            f"({size_text(row.headroom or 0)} left): {_biggest(row)}",
            gpu=row.gpu,
            gpus=[r.gpu for r in group],
            plan=row.to_dict(),
        )


def _max_model_len(ctx: Context, plan: MemoryPlan) -> tuple[int, str, dict[str, str]] | None:
    """The max_model_len the run sets (value, the key that sets it, the environment vLLM starts
    with), or None where vLLM takes the model's own length."""
    from envdoctor.plan.memory.planner import server_max_model_len as _server_mml

    k = plan.knobs
    if not k.use_vllm:
        return None
    if k.vllm_mode == "server":
        launch = ctx.plan.server
        value = _server_mml(ctx)
        env = dict(ctx.facts.env, **(launch.env if launch is not None else {}))
        return (value, "--max_model_len", env) if value else None
    key = "vllm_max_model_length" if "vllm_max_model_length" in ctx.config else "vllm_max_model_len"
    env = trainer_env(ctx.facts, ctx.plan.trainer)
    return (k.vllm_max_model_len, key, env) if k.vllm_max_model_len else None


@rule("MEM105", needs=("model", "vllm"))
def max_model_len_beyond_model(ctx: Context) -> Iterator[Hit]:
    from envdoctor.plan.memory.planner import for_context

    plan = for_context(ctx)
    if plan is None:
        return
    found, derived = _max_model_len(ctx, plan), plan.model.derived_max_len()
    if found is None or not derived:
        return
    value, key, env = found
    if value <= derived or env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").strip() in ("1", "true"):
        return
    m = plan.model
    scaled = (
        f" (rope_scaling × {m.rope_factor:g} of {m.rope_base or m.max_positions})"
        if m.rope_factor != 1.0
        else ""
    )
    yield hit(
        f"{key} {value} is longer than {m.name or 'the model'} supports: "
        f"max_position_embeddings gives {derived}{scaled}. vLLM refuses to start "
        '("User-specified max_model_len ... is greater than the derived max_model_len").',
        fix=f"{key} {derived} (or less: prompt + completion is enough), or a rope_scaling "
        "the model was trained for (yarn) in its config.json",
        remedy=[r for r in (vllm_length_remedy(ctx, key, int(derived)),) if r is not None],
        max_model_len=value,
        derived_max_model_len=derived,
    )


@rule("MEM106", needs=("model", "vllm", "trl-keys"))
def max_model_len_below_prompt_and_completion(ctx: Context) -> Iterator[Hit]:

    plan = _judged(ctx)
    found = _max_model_len(ctx, plan) if plan is not None else None
    if plan is None or found is None:
        return
    value, key, _ = found
    k = plan.knobs
    prompt, need = k.prompt_len, k.prompt_len + k.completion_len
    if need <= value:
        return  # a prompt length taken from this very bound is equal to it
    known = k.prompt_source in ("max_prompt_length", "--prompt-tokens")
    said = f"{prompt} ({'from ' + k.prompt_source if known else 'assumed'})"
    refused = known and prompt >= value
    what = (
        f'vLLM refuses such a prompt ("The decoder prompt (length {prompt}) is longer than '
        f'the maximum model length of {value}")'
        if refused
        else f"completions stop at {value} tokens less the prompt, short of "
        "max_completion_length, and are scored as truncated"
    )
    yield hit(
        f"{key} {value} is below the prompt length {said} + max_completion_length "
        f"{k.completion_len} = {need}: {what}.",
        severity="error" if refused else "warning",
        fix=f"{key} {need} or more (within the model's length), or a shorter max_completion_length",
        remedy=_longer_or_shorter(ctx, plan, key, value, need),
        max_model_len=value,
        prompt_length=prompt,
        completion_length=k.completion_len,
    )


def _longer_or_shorter(ctx: Context, plan: MemoryPlan, key: str, value: int, need: int) -> list[Remedy]:
    """vLLM's length raised to prompt + completion (within the model's), else completions
    shortened to what the length leaves after the prompt."""
    out: list[Remedy | None] = []
    derived = plan.model.derived_max_len()
    if not derived or need <= derived:
        out.append(vllm_length_remedy(ctx, key, need))
    room = value - plan.knobs.prompt_len
    if room >= 64:
        out.append(
            Remedy(config_set={"max_completion_length": room}, fix=f"set max_completion_length: {room}")
        )
    return [r for r in out if r is not None]
