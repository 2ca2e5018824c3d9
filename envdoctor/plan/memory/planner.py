"""Assemble the memory plan of a run: one row per GPU (trainer ranks, vLLM), and the fixes.

``for_context`` resolves the model (``--model`` / ``model_name_or_path`` → a local
``config.json``; ``--model-params``), the knobs and the layout, and caches the plan on the
context, so the rules, ``plan-memory`` and triage share one computation.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from envdoctor import versions
from envdoctor.errors import InputError
from envdoctor.knowledge import knowledge
from envdoctor.plan.layout import trainer_env
from envdoctor.plan.memory.knobs import MEMORY_KEYS, Knobs, number
from envdoctor.plan.memory.knobs import from_config as knobs_from_config
from envdoctor.plan.memory.measured import measured_note
from envdoctor.plan.memory.parts import (
    CONTEXT,
    THIN,
    GpuPlan,
    Part,
    asleep_parts,
    host_plan,
    overhead_parts,
    trainer_parts,
    vllm_parts,
)
from envdoctor.plan.memory.shape import ModelShape, load_shape, parse_count, shape_from_count
from envdoctor.plan.model_name import NO_MODEL, model_name, model_params_hint
from envdoctor.plan.values import as_bool
from envdoctor.units import GiB, MiB, size_text

if TYPE_CHECKING:
    from envdoctor.facts.interface import Facts
    from envdoctor.knowledge import Knowledge
    from envdoctor.plan.interface import GpuLayout, Plan
    from envdoctor.trl_release import TrlRelease

_CACHE = "_memory_plan"
_MODEL = "_memory_model"


class RuleContext(Protocol):
    """What the memory plan reads of a rule's context (``checks.context.Context``, a layer up)."""

    @property
    def facts(self) -> Facts: ...
    @property
    def plan(self) -> Plan: ...
    @property
    def kb(self) -> Knowledge: ...
    @property
    def options(self) -> dict[str, Any]: ...
    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def layout(self) -> GpuLayout: ...
    @property
    def trl(self) -> TrlRelease: ...


@dataclass
class Fix:
    text: str
    saves: int  # bytes on the GPU it is computed for

    def to_dict(self) -> dict[str, Any]:
        return {"fix": self.text, "saves_bytes": self.saves, "saves_gib": round(self.saves / GiB, 2)}


@dataclass
class MemoryPlan:
    model: ModelShape
    knobs: Knobs
    gpus: list[GpuPlan] = field(default_factory=list)

    def fixes(self, row: GpuPlan) -> list[Fix]:
        return trainer_fixes(self.model, self.knobs, row) if row.role != "vLLM" else []

    def sizing(self, row: GpuPlan) -> dict[str, Any]:
        """A training row's smallest fitting set of fixes and its largest fitting batch."""
        if row.role == "vLLM" or not row.capacity:
            return {}
        found = smallest_fix_set(self.model, self.knobs, row)
        largest = largest_batch(self.model, self.knobs, row)
        out: dict[str, Any] = {
            "fits_with": None if found is None else {"changes": found[0], "total_bytes": found[1].total},
            "largest_batch_that_fits": largest,
        }
        if largest == 0:  # not even 1: what batch 1 needs says why
            one = trainer_row(self.model, self.knobs.replace(batch=1), row.gpu, row.capacity)
            out["batch_1_total_bytes"] = one.total
        return out

    def to_dict(self) -> dict[str, Any]:
        m, k = self.model, self.knobs
        return {
            "model": {
                "name": m.name,
                "family": m.family,
                "source": m.source,
                "parameters": m.total_params(),
                "active_parameters": m.active_params(),
                "layers": m.layers,
                "hidden": m.hidden,
                "vocab": m.vocab,
                "kv_bytes_per_token": m.kv_bytes_per_token(2),
            },
            "setup": {
                "trl": k.trl,
                "strategy": k.strategy,
                "world": k.world,
                "per_device_train_batch_size": k.batch,
                "prompt_length": k.prompt_len,
                "prompt_length_source": k.prompt_source,
                "max_completion_length": k.completion_len,
                "gradient_checkpointing": k.gradient_checkpointing,
                "weight_bytes": k.weight_bytes,
                # the dtype the weights row holds: DeepSpeed with bf16 trains bf16 weights
                # (its fp32 master copy is counted with the optimizer states)
                "held_weight_bytes": 2
                if k.strategy.startswith("zero") and k.compute_bytes == 2
                else k.weight_bytes,
                "optim": k.optim,
                "beta": k.beta,
                "lora": k.lora,
                "vllm_mode": k.vllm_mode if k.use_vllm else None,
            },
            "assumed": m.assumed + k.assumed,
            "measured": measured_note(m.total_params(), k.sharded),
            "host": host.to_dict() if (host := host_plan(m, k)) else None,
            "gpus": [
                dict(g.to_dict(), fixes=[f.to_dict() for f in self.fixes(g)], **self.sizing(g))
                for g in self.gpus
            ],
        }


# ---- the model ------------------------------------------------------------------------------
def _environ(ctx: RuleContext) -> dict[str, str]:
    env = dict(os.environ) if ctx.facts.live else {"HOME": os.path.expanduser("~")}
    env.update(ctx.facts.env)
    return env


def resolve_model(ctx: RuleContext) -> tuple[ModelShape | None, str]:
    """The model's shape, or None and why (a reason rules are skipped with)."""
    if ctx.options.get("model_params"):
        return shape_from_count(parse_count(str(ctx.options["model_params"]))), ""
    name = model_name(ctx)
    if not name:
        return None, NO_MODEL
    try:
        shape = load_shape(name, _environ(ctx))
    except InputError as exc:
        return None, str(exc)
    if shape is None:
        return None, (
            f"config.json of {name} is not on this machine (a local directory or the "
            "Hugging Face cache; nothing is downloaded): envdoctor plan-memory "
            f"{model_params_hint(name)}"
        )
    return shape, ""


# ---- the plan ---------------------------------------------------------------------------------
def _resolved(ctx: RuleContext) -> tuple[ModelShape | None, str]:
    """``resolve_model`` once per context (each memory rule asks; config.json is read once)."""
    if _MODEL not in ctx.options:
        ctx.options[_MODEL] = resolve_model(ctx)
    resolved: tuple[ModelShape | None, str] = ctx.options[_MODEL]
    return resolved


def for_context(ctx: RuleContext) -> MemoryPlan | None:
    """The plan of ``ctx`` (cached on it), or None when the model cannot be resolved."""
    if _CACHE in ctx.options:
        cached: MemoryPlan | None = ctx.options[_CACHE]
        return cached
    shape, _ = _resolved(ctx)
    plan = build(ctx, shape) if shape is not None else None
    ctx.options[_CACHE] = plan
    return plan


def model_problem(ctx: RuleContext) -> str | None:
    """Why the memory rules cannot run (the engine's skip reason), or None."""
    shape, why = _resolved(ctx)
    return why if shape is None else None


def _capacity(ctx: RuleContext, gpu: int | None) -> int | None:
    g = ctx.facts.gpu(gpu) if gpu is not None else None
    if g is not None and g.memory_total_mib:
        return int(g.memory_total_mib) * MiB
    override = ctx.options.get("gpu_memory")
    return int(override) if override else None


def build(ctx: RuleContext, shape: ModelShape) -> MemoryPlan:
    lay = ctx.layout  # without GPU facts: the ranks' count still comes from the launch
    world, node, mode = lay.world_size, lay.num_processes, lay.generation_mode
    trainer = ctx.plan.trainer
    trl = ctx.trl
    k = knobs_from_config(
        ctx.config,
        trl.version,
        shape.dtype,
        ctx.plan.accelerate,
        trainer.options if trainer else {},
        world=world,
        node_ranks=node,
        vllm_mode=mode,
        torch=ctx.facts.version("torch"),
        prompt_tokens=ctx.options.get("prompt_tokens"),
        server_max_model_len=server_max_model_len(ctx),
    )
    computed = tuple(key for key in MEMORY_KEYS if ctx.plan.computed(key))
    if computed:
        k.assumed += [f"{key} at TRL's default (the script computes it)" for key in computed]
        # a computed bf16 / fp16 planned at 2-byte compute is the smaller of its two plans:
        # what does not fit then does not fit either way (``bf16=is_bf16_supported()``)
        lower = ("bf16", "fp16") if k.compute_bytes == 2 else ()
        k = k.replace(computed=tuple(key for key in computed if key not in lower))
    if trl.assumed:
        k.assumed.insert(
            0, f"TRL {trl.version} and its defaults ({trl.why}; --assume trl==VERSION plans for another)"
        )
    if k.use_vllm and mode == "colocate":
        k = k.replace(vllm_caps_process=fraction_caps_process(ctx))
    plan = MemoryPlan(model=shape, knobs=k)
    training: Sequence[int | None] = lay.training or [None]
    for gpu in training:
        plan.gpus.append(trainer_row(shape, k, gpu, _capacity(ctx, gpu), lay))
    if mode in ("legacy", "server") and not (lay.server and lay.server.source == "nvml"):
        for gpu in lay.generation:
            if gpu in lay.training:
                continue  # a shared GPU is LAY's finding; its trainer row is above
            plan.gpus.append(server_row(ctx, shape, k, gpu, _capacity(ctx, gpu)))
    return plan


def server_max_model_len(ctx: RuleContext) -> int | None:
    launch = ctx.plan.server
    value = int(number(launch.options.get("max_model_len"), 0, limit=1e7)) if launch else 0
    return value or None


def fraction_caps_process(ctx: RuleContext) -> bool:
    """Whether the installed vLLM's ``gpu_memory_utilization`` caps the whole process (V1 engine
    of 0.8.0-0.9.0) rather than vLLM's own share (rules/knowledge/vllm.yaml)."""
    env = trainer_env(ctx.facts, ctx.plan.trainer)
    if env.get("VLLM_USE_V1", "").strip() == "0":  # the V0 engine measures its own instance
        return False
    version = ctx.facts.version("vllm")
    scopes: list[dict[str, Any]] = ctx.kb.vllm.get("gpu_memory_utilization_scope", {}).get("ranges", [])
    for scope in scopes:
        if versions.satisfies(version, str(scope.get("vllm", ""))):
            return bool(scope.get("scope") == "process")
    return False


def trainer_row(
    shape: ModelShape, k: Knobs, gpu: int | None, capacity: int | None, lay: GpuLayout | None = None
) -> GpuPlan:
    ranks = [r.rank for r in lay.ranks if r.gpu == gpu] if lay is not None else []
    role = ", ".join(f"rank {r}" for r in ranks) or "rank (each)"
    if gpu is None and len(ranks) > 1:
        role = f"each of {len(ranks)} ranks"
    parts = trainer_parts(shape, k)
    row = GpuPlan(gpu=gpu, role=role, capacity=capacity)
    if k.use_vllm and k.vllm_mode == "colocate":
        row.role += " + vLLM (colocated)"
        # without the model's length (no config.json: --model-params) one sequence of prompt +
        # completion is the least vLLM must hold: the weight check runs all the same
        row.max_model_len = k.vllm_max_model_len or shape.max_positions or k.seq_len
        # vLLM checks its KV cache at start, asleep later or not
        vparts, row.kv_need, row.kv_free = vllm_parts(shape, k, capacity, row.max_model_len, k.vllm_tp)
        row.vllm_util, row.vllm_tp = k.vllm_util, max(k.vllm_tp, 1)
        if k.vllm_sleep:
            parts += asleep_parts()
        else:
            budget = int(k.vllm_util * capacity) if capacity else sum(p.bytes for p in vparts)
            note = f"{k.vllm_util} × the GPU: weights + KV cache + graphs"
            if k.vllm_caps_process and capacity:
                # TRL builds the engine after Trainer placed the model (one rank, DDP); ZeRO and
                # FSDP place it later. The CUDA context is outside torch: vLLM counts it too.
                held = CONTEXT + (
                    sum(p.bytes for p in parts if p.name == "weights") if k.strategy == "ddp" else 0
                )
                budget = max(budget - held, 0)
                note = (
                    f"{k.vllm_util} × the GPU less the {size_text(held)} the process held "
                    "when vLLM started (vLLM < 0.9.1 counts it)"
                )
            parts.append(Part("vLLM (gpu_memory_utilization)", budget, note))
    row.parts = parts + overhead_parts([p for p in parts if not p.name.startswith("vLLM")], k)
    return row


def server_row(ctx: RuleContext, shape: ModelShape, k: Knobs, gpu: int, capacity: int | None) -> GpuPlan:
    launch = ctx.plan.server
    opts = launch.options if launch is not None else {}
    if k.vllm_mode == "server":
        util = number(opts.get("gpu_memory_utilization"), 0.9, limit=1e7)  # trl vllm-serve's default
        util = util if 0.0 < util <= 1.0 else 0.9
        mml = number(opts.get("max_model_len"), 0, limit=1e7) or shape.max_positions or k.seq_len
        tp = int(number(opts.get("tensor_parallel_size"), 1, limit=1e7)) or 1
        eager = bool(as_bool(opts.get("enforce_eager", False)))
    else:  # legacy: the trainer's own vLLM on vllm_device
        util, mml, tp, eager = k.vllm_util, k.vllm_max_model_len or shape.max_positions or k.seq_len, 1, False
    vk = k.replace(vllm_util=util, vllm_enforce_eager=eager)
    parts, need, free = vllm_parts(shape, vk, capacity, int(mml) if mml else None, tp)
    row = GpuPlan(
        gpu=gpu,
        role="vLLM",
        capacity=capacity,
        kv_need=need,
        kv_free=free,
        max_model_len=int(mml) if mml else None,
        vllm_util=util,
        vllm_tp=max(tp, 1),
    )
    row.parts = parts + [Part("CUDA context", CONTEXT, "outside the budget")]
    return row


# ---- fixes --------------------------------------------------------------------------------
def _candidates(shape: ModelShape, k: Knobs, row: GpuPlan) -> list[tuple[str, Knobs]]:
    out: list[tuple[str, Knobs]] = []
    if not k.gradient_checkpointing:
        out.append(("gradient_checkpointing: true", k.replace(gradient_checkpointing=True)))
    gathers = k.strategy == "zero3" and k.ds3_gather and not k.use_vllm
    if gathers and knowledge().has_config_key("ds3_gather_for_generation", k.trl) is not False:
        out.append(
            (
                "ds3_gather_for_generation: false (ZeRO-3 generates without gathering the whole "
                "model on each rank; slower generation)",
                k.replace(ds3_gather=False),
            )
        )
    if k.batch >= 2:
        half = k.batch // 2
        out.append(
            (
                f"per_device_train_batch_size: {half} with gradient_accumulation_steps: "
                f"{k.grad_accum * 2} (the same generation batch)",
                k.replace(
                    batch=half, grad_accum=k.grad_accum * 2, steps_per_generation=k.steps_per_generation * 2
                ),
            )
        )
    if k.completion_len >= 256:
        out.append(
            (
                f"max_completion_length: {k.completion_len // 2}",
                k.replace(completion_len=k.completion_len // 2),
            )
        )
    if k.world > 1 and k.strategy in ("ddp", "zero1", "zero2", "fsdp_grad_op"):
        out.append(
            (
                "DeepSpeed ZeRO-3 (accelerate config: distributed_type: DEEPSPEED, "
                "zero_stage: 3) or FSDP FULL_SHARD",
                k.replace(strategy="zero3"),
            )
        )
    if not k.offload_optimizer and not k.lora and "8bit" not in k.optim:
        out.append(_offload(shape, k))
    if k.weight_bytes == 4 and not k.lora:
        key = "torch_dtype" if knowledge().feature("model_init_kwargs_dtype", k.trl) is False else "dtype"
        out.append(
            (
                f"model_init_kwargs: {{{key}: bfloat16}} (bf16 weights and AdamW states; "
                "less precise updates)",
                k.replace(weight_bytes=2),
            )
        )
    if not k.lora and "8bit" not in k.optim and not k.strategy.startswith("zero"):
        out.append(("optim: adamw_8bit (bitsandbytes)", k.replace(optim="adamw_8bit")))
    if not k.lora:
        out.append(
            (
                "use_peft: true (LoRA, lora_r: 16, lora_target_modules: all-linear)",
                k.replace(lora=True, lora_r=16, lora_targets=("all-linear",)),
            )
        )
    if k.beta > 0 and not k.lora:
        out.append(("beta: 0.0 (no reference model)", k.replace(beta=0.0)))
    if k.use_vllm and k.vllm_mode == "colocate" and not k.vllm_sleep:
        if knowledge().has_config_key("vllm_enable_sleep_mode", k.trl) is not False:
            out.append(
                (
                    "vllm_enable_sleep_mode: true (vLLM frees its memory while training)",
                    k.replace(vllm_sleep=True),
                )
            )
        if row.capacity:
            out += _lower_fraction(shape, k, row)
    return out


def _offload(shape: ModelShape, k: Knobs) -> tuple[str, Knobs]:
    """CPU offload in the run's own terms: DeepSpeed's key in a DeepSpeed run, FSDP's in an FSDP
    run, and for any other run DeepSpeed named as the change it is."""
    if k.strategy.startswith("fsdp"):
        changed = k.replace(offload_params=True, offload_optimizer=True, offload_device="cpu")
        head, what = "fsdp_offload_params: true", "parameters, gradients and optimizer states"
    elif k.strategy.startswith("zero"):
        changed = k.replace(offload_optimizer=True, offload_device="cpu")
        head, what = "offload_optimizer_device: cpu in the DeepSpeed config", "optimizer states"
    else:
        changed = k.replace(strategy="zero2", offload_optimizer=True, offload_device="cpu")
        head = (
            "with DeepSpeed ZeRO-2 optimizer offload (accelerate config: distributed_type "
            "DEEPSPEED, zero_stage 2, offload_optimizer_device cpu)"
        )
        what = "optimizer states"
    host = host_plan(shape, changed)
    need = f", ~{size_text(host.bytes_per_node, digits=0)} per node" if host else ""
    return f"{head} ({what} in CPU memory{need}, slower steps)", changed


# ---- vLLM colocated: a fraction that holds both the step and the KV cache --------------------
@dataclass
class Generation:
    """One way to run vLLM in the training GPUs: a tensor-parallel size and the least fraction
    whose KV cache holds one max_model_len sequence, with the trainer's peak beside it."""

    tp: int
    util: float
    trainer_total: int

    def text(self, k: Knobs) -> str:
        tp = f" with vllm_tensor_parallel_size: {self.tp}" if self.tp != k.vllm_tp else ""
        return f"vllm_gpu_memory_utilization: {self.util:.2f}{tp}"


def tp_sizes(shape: ModelShape, k: Knobs) -> list[int]:
    """vLLM tensor-parallel sizes a colocated run may take: dividing the ranks (TRL's colocate
    groups ranks by it) within one node, and the attention heads (vLLM shards them)."""
    node = max(min(k.node_ranks, k.world), 1)
    return [t for t in (1, 2, 4, 8) if t <= node and k.world % t == 0 and shape.heads % t == 0]


def least_fraction(
    shape: ModelShape, k: Knobs, capacity: int, max_model_len: int | None, tp: int
) -> float | None:
    """The smallest fraction (in 0.05 steps) whose KV cache holds one max_model_len sequence."""
    for step in range(1, 20):
        util = round(step * 0.05, 2)
        _, need, free = vllm_parts(shape, k.replace(vllm_util=util), capacity, max_model_len, tp)
        if need is None or free is None or free >= need:
            return util
    return None


def generations(shape: ModelShape, k: Knobs, row: GpuPlan) -> list[Generation]:
    """Each tensor-parallel size with the least fraction that holds the KV cache, smallest first."""
    if not row.capacity or not (k.use_vllm and k.vllm_mode == "colocate"):
        return []
    out = []
    for tp in tp_sizes(shape, k) or [1]:
        util = least_fraction(shape, k, row.capacity, row.max_model_len, tp)
        if util is not None:
            total = trainer_row(
                shape, k.replace(vllm_util=util, vllm_tp=tp, vllm_sleep=False), row.gpu, row.capacity
            ).total
            out.append(Generation(tp, util, total))
    return out


def _lower_fraction(shape: ModelShape, k: Knobs, row: GpuPlan) -> list[tuple[str, Knobs]]:
    """A lower fraction only where the KV cache still holds a sequence (with vLLM tensor parallel
    across the colocated ranks where one GPU's share cannot)."""
    lower = [g for g in generations(shape, k, row) if g.util < k.vllm_util]
    picks = lower[:1] + [min(lower, key=lambda g: (g.util, g.tp))] if lower else []
    out, seen = [], set()
    for g in picks:
        if (g.tp, g.util) not in seen:
            seen.add((g.tp, g.util))
            out.append((g.text(k), k.replace(vllm_util=g.util, vllm_tp=g.tp)))
    return out


def trainer_fixes(shape: ModelShape, k: Knobs, row: GpuPlan, limit: int = 4) -> list[Fix]:
    """What each change saves on this GPU, largest first."""
    fixes = []
    for text, changed in _candidates(shape, k, row):
        new = trainer_row(shape, changed, row.gpu, row.capacity)
        if (
            new.kv_need is not None
            and new.kv_free is not None
            and new.kv_free < new.kv_need
            and (row.kv_free is None or new.kv_free < row.kv_free)
        ):
            continue  # it would starve vLLM's KV cache (MEM103): no fix
        saves = row.total - new.total
        if saves > 64 * MiB:
            fixes.append(Fix(text, saves))
    return sorted(fixes, key=lambda f: -f.saves)[:limit]


def _fits(row: GpuPlan) -> bool:
    kv_ok = row.kv_need is None or row.kv_free is None or row.kv_free >= row.kv_need
    return row.capacity is not None and row.total <= row.capacity and kv_ok


def _diff(k: Knobs, changed: Knobs) -> dict[str, Any]:
    return {
        f: getattr(changed, f)
        for f in Knobs.__dataclass_fields__
        if f != "assumed" and getattr(changed, f) != getattr(k, f)
    }


def smallest_fix_set(
    shape: ModelShape, k: Knobs, row: GpuPlan, most: int = 3
) -> tuple[list[str], GpuPlan] | None:
    """The fewest of the single fixes that together fit this GPU (up to ``most``; among sets of
    one size the one listed first, the least invasive), with the row it gives; None if none."""
    from itertools import combinations

    if not row.capacity or _fits(row):
        return None
    cands = [(text, _diff(k, changed)) for text, changed in _candidates(shape, k, row)]
    for size in range(1, most + 1):
        for combo in combinations(cands, size):
            merged: dict[str, Any] = {}
            for _, d in combo:
                merged.update(d)
            if len(merged) < sum(len(d) for _, d in combo):
                continue  # two fixes that set the same knob do not combine
            new = trainer_row(shape, k.replace(**merged), row.gpu, row.capacity)
            if _fits(new):
                return [text for text, _ in combo], new
    return None


def largest_batch(shape: ModelShape, k: Knobs, row: GpuPlan, limit: int = 4096) -> int | None:
    """The largest per_device_train_batch_size that fits this GPU as configured otherwise
    (0 when not even 1 does; None where the capacity is unknown)."""
    if not row.capacity:
        return None

    def fits(b: int) -> bool:
        return _fits(trainer_row(shape, k.replace(batch=b), row.gpu, row.capacity))

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and fits(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:  # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def is_thin(row: GpuPlan) -> bool:
    return row.headroom is not None and 0 <= row.headroom < THIN * (row.capacity or 0)
