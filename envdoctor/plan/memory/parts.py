"""The memory plan: what each GPU of a GRPO run will hold at its peak, before anything is loaded.

Trainer side, per rank (bytes; P parameters, P_t trainable, N data-parallel ranks):
- weights P × dtype bytes; ZeRO-3 / FSDP full shard hold P/N plus the gathered layers in flight;
  DeepSpeed trains bf16 weights with an fp32 master copy in the optimizer (ZeRO paper, Rajbhandari
  et al. 2020, §3: 2Ψ + 2Ψ + 12Ψ for Adam in mixed precision; stage 1 shards the 12Ψ, stage 2
  the gradients too, stage 3 everything);
- gradients P_t × dtype bytes (plain torch keeps them in the parameter's dtype), DDP's gradient
  buckets one more copy (torch DDP, ``gradient_as_bucket_view=False``);
- AdamW's two moments in the parameter dtype (torch ``AdamW``), 12 bytes under DeepSpeed, 2 for an
  8-bit optimizer (bitsandbytes: one byte per moment);
- activations of one micro-batch of ``per_device_train_batch_size`` × (prompt + completion)
  tokens, per layer and token ≈ (26·h + 6·kv + 8·I) bytes at bf16 compute (the tensors autograd
  saves in transformers' Llama/Qwen2 decoder layer: RMSNorm inputs in fp32, q/k/v, rotary and
  SDPA outputs, the gated MLP's gate/up/act/product); with gradient checkpointing only each
  layer's input plus one layer recomputed (transformers ``gradient_checkpointing_enable``);
- fp32 weights under bf16 autocast: the bf16 casts of the weights that autocast caches and
  autograd saves for backward (torch.autocast weight cache) until backward releases them;
- the log-prob logits: TRL ≤ 1.14 materializes (batch, completion + 1, vocab) logits in the
  compute dtype, ``selective_log_softmax`` adds a second copy and backward a third; TRL ≥ 1.15's
  fused LM head needs a 4096 × 32768 tile, an fp32 LM-head gradient and fp32 hidden gradients;
- ZeRO-3: the gradient partition is allocated once and held throughout (DeepSpeed stage3
  ``grad_partitions_flat_buffer``); the optimizer step adds one sub-group's gradients in fp32
  (``_prepare_fp32_grad_for_sub_group``: min(sub_group_size 1e9, P_t/N) × 4 B); generating without
  vLLM gathers every parameter on each rank (TRL's ``unwrap_model_for_generation`` with
  ``ds3_gather_for_generation``, its default), a third phase beside forward/backward and the step;
- a reference model (``beta > 0``, no PEFT): P × dtype bytes (sharded under ZeRO-3);
- CUDA context and cuBLAS workspaces (~0.6 GiB, outside PyTorch's count), NCCL's communicator
  buffers with several ranks (~0.8 GiB more, measured) and the caching allocator's fragmentation
  (10 % of what PyTorch allocates: 7–14 % measured at the second optimizer step, median 9.5 %;
  25 % under FSDP, whose all-gathers and reduce-scatters run on
  their own streams: measured 21–26 % on two H200s; 28 % under DeepSpeed ZeRO: measured 26–30 %
  with ZeRO-1, -2 and -3, docs/validation/memory-gpu-h200x2.md).

Generation side (vLLM): ``gpu_memory_utilization`` × total memory is vLLM's budget; the weights,
the profiling activations and CUDA graphs come out of it and the rest is KV cache, of
2 × layers × kv_heads × head_dim × dtype bytes per token; one sequence of ``max_model_len`` must fit
(vLLM ``check_enough_kv_cache_memory`` raises at start otherwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envdoctor.plan.memory.knobs import Knobs
from envdoctor.plan.memory.shape import ModelShape
from envdoctor.units import GiB, billions

CONTEXT = int(0.6 * GiB)
NCCL = int(0.8 * GiB)  # several ranks: 1.55 GiB outside PyTorch per rank vs 0.73–0.88 alone
FRAGMENTATION = 0.10  # one rank / DDP: 7-14 % at step 2 on 8 shapes (memory-gpu-h200x4.md)
FSDP_FRAGMENTATION = 0.25
ZERO_FRAGMENTATION = 0.28  # DeepSpeed ZeRO-1 / -2 / -3: measured 26-30 % on two H200s
ZERO3_SUB_GROUP = 10**9  # DeepSpeed's default sub_group_size (parameters per optimizer sub-group)
THIN = 0.10  # headroom below this share of the GPU is a warning
TILE = 4096 * 32768  # TRL >= 1.15 fused LM head: TOKEN_CHUNK_SIZE × _CHUNKED_LOGPROB_CHUNK_SIZE
_PROJ = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


@dataclass
class Part:
    name: str
    bytes: int
    note: str = ""
    at_peak: bool = True  # False: held in another phase than the peak (shown, not summed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "part": self.name,
            "bytes": self.bytes,
            "gib": round(self.bytes / GiB, 2),
            "note": self.note,
            "at_peak": self.at_peak,
        }


@dataclass
class GpuPlan:
    gpu: int | None
    role: str
    parts: list[Part] = field(default_factory=list)
    capacity: int | None = None  # bytes
    kv_need: int | None = None  # vLLM: bytes one max_model_len sequence needs
    kv_free: int | None = None  # vLLM: bytes its budget leaves for the KV cache
    max_model_len: int | None = None
    vllm_util: float | None = None
    vllm_tp: int = 1  # vLLM's tensor parallel size: the KV heads one GPU holds

    @property
    def total(self) -> int:
        return sum(p.bytes for p in self.parts if p.at_peak)

    @property
    def headroom(self) -> int | None:
        return None if self.capacity is None else self.capacity - self.total

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "role": self.role,
            "parts": [p.to_dict() for p in self.parts],
            "total_bytes": self.total,
            "capacity_bytes": self.capacity,
            "headroom_bytes": self.headroom,
            "kv_need_bytes": self.kv_need,
            "kv_free_bytes": self.kv_free,
            "max_model_len": self.max_model_len,
        }


def same_gpus(rows: list[Any], key: Any = None) -> list[list[Any]]:
    """Rows (``GpuPlan`` or their dicts) grouped where they plan the same: eight ranks of one
    setup are one table and one finding, not eight. ``key`` gives what must be equal (default:
    a GpuPlan's parts, capacity, KV numbers and its role with the rank numbers left out)."""
    key = key or (
        lambda r: (
            re.sub(r"\d+", "#", r.role),
            r.capacity,
            r.kv_need,
            r.kv_free,
            r.max_model_len,
            r.vllm_util,
            tuple((p.name, p.bytes, p.at_peak) for p in r.parts),
        )
    )
    groups: dict[Any, list[Any]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return list(groups.values())


def gpus_text(indices: list[int | None]) -> str:
    """``GPU 3``, ``GPUs 0–7`` (consecutive), ``GPUs 0, 2, 5``; ``each GPU`` when unknown."""
    known = [i for i in indices if i is not None]
    if not known:
        return "each GPU"
    if len(known) == 1:
        return f"GPU {known[0]}"
    if known == list(range(known[0], known[0] + len(known))):
        return f"GPUs {known[0]}–{known[-1]}"
    return "GPUs " + ", ".join(map(str, known))


def each_role(role: str, n: int) -> str:
    """A row's role said for ``n`` GPUs alike: ``each: a rank + vLLM (colocated)``."""

    def ranks(m: re.Match[str]) -> str:
        k = m.group(0).count("rank")
        return "a rank" if k == 1 else f"{k} ranks"

    return role if n == 1 else "each: " + re.sub(r"\brank \d+(?:, rank \d+)*", ranks, role)


# ---- parameters ------------------------------------------------------------------------------
def lora_params(shape: ModelShape, k: Knobs) -> int:
    """LoRA adapters: r × (in + out) for each targeted projection of each layer."""
    h, q, kv, inter = shape.hidden, shape.q_dim, shape.kv_dim, shape.intermediate
    dims = {
        "q_proj": (h, q),
        "k_proj": (h, kv),
        "v_proj": (h, kv),
        "o_proj": (q, h),
        "gate_proj": (h, inter),
        "up_proj": (h, inter),
        "down_proj": (inter, h),
    }
    targets = (
        set(_PROJ)
        if any(t in ("all-linear", "all_linear") for t in k.lora_targets)
        else {t for t in k.lora_targets if t in dims}
    )
    return shape.layers * sum(k.lora_r * sum(dims[t]) for t in targets)


def trainable(shape: ModelShape, k: Knobs) -> int:
    return lora_params(shape, k) if k.lora else shape.total_params()


def _deepspeed(k: Knobs) -> bool:
    return k.strategy.startswith("zero")


def _shards(k: Knobs) -> int:
    if k.strategy == "fsdp_hybrid":
        return max(min(k.node_ranks, k.world), 1)
    return k.world


# ---- trainer --------------------------------------------------------------------------------
def trainer_parts(shape: ModelShape, k: Knobs) -> list[Part]:
    """What one training rank holds at its peak (see the module docstring for each formula)."""
    P, Pt, n = shape.total_params(), trainable(shape, k), _shards(k)
    ds = _deepspeed(k)
    wb = 2 if ds and k.compute_bytes == 2 else k.weight_bytes  # DeepSpeed bf16: bf16 weights
    parts: list[Part] = []
    # weights
    if k.lora and (k.load_in_4bit or k.load_in_8bit):
        lin = shape.linear_params()
        per = 0.5 * 1.07 if k.load_in_4bit else 1.03  # NF4 + absmax blocks / int8 + scales
        weights = int(lin * per + (P - lin) * 2)
        note = f"{'4' if k.load_in_4bit else '8'}-bit base, embeddings and norms in bf16"
    else:
        weights, note = P * wb, f"{billions(P)} × {wb} B"
    gathered = 0
    if k.sharded:  # ZeRO-3 / FSDP shard every parameter, the frozen base of LoRA included
        gathered = 2 * max(shape.layer_params(), shape.embedding_params()) * k.compute_bytes
        full = weights
        weights = (0 if k.offload_params else weights // n) + gathered
        note += f" / {n} ranks + gathered layers"
    parts.append(Part("weights", int(weights), note))
    if k.lora:
        adapters = lora_params(shape, k) * 4
        parts.append(
            Part(
                "LoRA adapters",
                adapters // n if k.sharded else adapters,
                f"r={k.lora_r}, {'+'.join(k.lora_targets)}, fp32" + (f" / {n} ranks" if k.sharded else ""),
            )
        )
    # gradients and optimizer
    gb = 4 if k.lora else wb
    grads = Pt * gb
    if k.strategy in ("zero2", "zero3", "fsdp_full", "fsdp_grad_op", "fsdp_hybrid"):
        grads //= n
    if k.offload_params and k.strategy in ("fsdp_full", "fsdp_hybrid"):
        grads = 0
    opt_note, per_param = _optimizer(k, ds, gb)
    opt = Pt * per_param
    if k.strategy != "ddp":
        opt //= n
    if k.offload_optimizer:
        opt, opt_note = 0, opt_note + f", offloaded to {'NVMe' if k.offload_device == 'nvme' else 'CPU'}"
    parts.append(Part("optimizer states", int(opt), opt_note))
    if k.strategy == "ddp" and k.world > 1:
        parts.append(Part("DDP gradient buckets", Pt * gb, "a second copy of the gradients"))
    if k.beta > 0 and not k.lora:
        ref = P * (2 if ds and k.compute_bytes == 2 else k.weight_bytes)
        if k.strategy == "zero3":
            ref //= n
        parts.append(Part("reference model", int(ref), f"beta={k.beta}"))
    # the forward/backward phase and the optimizer-step phase
    act, act_note = activations(shape, k)
    fwd = [Part("activations", act, act_note)]
    fsdp = k.strategy.startswith("fsdp")  # FSDP's mixed precision gathers bf16 parameters
    if k.weight_bytes == 4 and k.compute_bytes == 2 and not ds and not k.lora and not fsdp:
        casts = shape.linear_params() * 2 + (0 if shape.tied else shape.embedding_params() * 2)
        fwd.append(Part("autocast weight copies", casts, "bf16 casts of fp32 weights"))
    fwd.append(Part("log-prob logits", *logits(shape, k)))
    zero3 = k.strategy == "zero3"
    # gradients held through the forward pass: accumulation, and ZeRO-3's partition buffer
    held = k.grad_accum > 1 or k.steps_per_generation > 1 or zero3
    grad_part = Part("gradients", int(grads), f"{'LoRA, ' if k.lora else ''}{gb} B each")
    step = [grad_part]
    if k.optim in ("adamw_torch", "adamw_hf") and not ds and not k.offload_optimizer:
        step.append(Part("optimizer step temporaries", int(Pt * gb), "foreach AdamW"))
    if zero3 and not k.offload_optimizer:
        sub = min(ZERO3_SUB_GROUP, Pt // n)
        step.append(Part("ZeRO-3 fp32 gradients of a sub-group", sub * 4, f"{billions(sub)} × 4 B"))
    gen: list[Part] = []
    if zero3 and k.ds3_gather and not k.use_vllm and full > gathered:
        gen.append(
            Part(
                "model gathered for generation",
                int(full - gathered),
                "ds3_gather_for_generation: every parameter on each rank while it generates",
            )
        )
    if held:
        parts.append(grad_part)
        step = step[1:]
    phases = [fwd, step, gen]
    peak = max(phases, key=lambda ps: sum(p.bytes for p in ps))
    for phase in phases:
        for p in phase if phase is not peak else ():
            p.at_peak = False
    return parts + fwd + step + gen


def _optimizer(k: Knobs, ds: bool, gb: int) -> tuple[str, int]:
    o = k.optim
    if "8bit" in o:
        return f"{o}: 2 × 1 B", 2
    if o.startswith(("sgd", "adafactor")):
        return f"{o}: no per-parameter moments counted", 0
    if ds:
        return "AdamW under DeepSpeed: fp32 master + 2 moments, 12 B", 12
    if "lion" in o:
        return f"{o}: 1 moment × {gb} B", gb
    return f"AdamW: 2 moments × {gb} B", 2 * gb


def activations(shape: ModelShape, k: Knobs) -> tuple[int, str]:
    """Saved activations of one micro-batch (forward + backward peak)."""
    tokens = k.batch * k.seq_len
    h, kv = shape.hidden, shape.kv_dim
    inter = shape.expert_intermediate * shape.experts_per_token if shape.experts else shape.intermediate
    scale = k.compute_bytes / 2
    per_layer = (26 * h + 6 * kv + 8 * inter) * scale  # bytes per token
    if shape.experts:  # each token's copy per routed expert, in and out, and fp32 router logits
        per_layer += 4 * shape.experts_per_token * h * scale + 8 * shape.experts
    resid = 4 if k.weight_bytes == 4 else 2
    head = tokens * 12 * h  # embedding output, final norm
    note = f"{k.batch} × {k.seq_len} tokens"
    if k.gradient_checkpointing:
        total = tokens * (shape.layers * h * resid + per_layer + 2 * h * 4) + head
        return int(total), note + ", gradient checkpointing"
    return int(tokens * shape.layers * per_layer + head), note + ", no gradient checkpointing"


def logits(shape: ModelShape, k: Knobs) -> tuple[int, str]:
    comp, V, b = k.completion_len, shape.vocab, k.batch
    if k.fused_logps:
        n = b * comp
        head_grad = 0 if k.lora else V * shape.hidden * 4  # LoRA: the LM head is frozen
        total = (
            TILE * k.compute_bytes + head_grad + n * shape.hidden * 4 + 32768 * shape.hidden * k.compute_bytes
        )
        return int(total), "TRL fused LM head: one tile" + ("" if k.lora else " + fp32 LM-head gradient")
    copies = 3 if k.compute_bytes == 2 else 2
    full = b * (comp + 1) * V * k.compute_bytes
    return int(copies * full), (
        f"{copies} × {b} × {comp + 1} × {V} × {k.compute_bytes} B (logits, log-softmax, gradient)"
    )


# ---- host memory ------------------------------------------------------------------------------
@dataclass
class HostPlan:
    """What CPU / NVMe offload puts outside the GPUs, per node."""

    device: str  # "cpu" or "nvme"
    bytes_per_node: int  # host RAM (CPU offload); NVMe: the states on the drive
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "bytes_per_node": self.bytes_per_node,
            "gib_per_node": round(self.bytes_per_node / GiB, 2),
            "note": self.note,
        }


def host_plan(shape: ModelShape, k: Knobs) -> HostPlan | None:
    """Host memory per node for offload, by DeepSpeed's own estimators (1.5 × buffer factor,
    ``estimate_zero2_model_states_mem_needs`` / ``estimate_zero3_model_states_mem_needs``,
    zero_init): ZeRO-1/2 optimizer offload P × max(4 × GPUs, 16) × 1.5; ZeRO-3 optimizer offload
    P × 16 / nodes × 1.5, with parameter offload P × 18 / nodes × 1.5 (P: trainable parameters
    for the optimizer's share, all for the parameters'). FSDP's CPU offload holds each node's
    shards of the parameters, gradients and optimizer states. None without offload."""
    if not (k.offload_optimizer or k.offload_params):
        return None
    P, Pt = shape.total_params(), trainable(shape, k)
    node = max(min(k.node_ranks, k.world), 1)
    nodes = max(k.world // node, 1)
    if k.strategy.startswith("fsdp"):
        _, per = _optimizer(k, False, 4 if k.lora else k.weight_bytes)
        gb = 4 if k.lora else k.weight_bytes
        shards = (P * k.weight_bytes + Pt * (gb + per)) * node // max(k.world, 1)
        return HostPlan(
            "cpu",
            int(shards),
            "FSDP CPU offload: this node's shards of parameters, gradients and optimizer states (estimate)",
        )
    need: float
    if k.strategy == "zero3":
        per = 18 if k.offload_params else 16
        need = (P * 18 if k.offload_params else Pt * 16) / nodes * 1.5
        what = "parameters and optimizer states" if k.offload_params else "optimizer states"
        formula = f"{'P' if k.offload_params else 'P_t'} × {per} / {nodes} node(s) × 1.5"
    else:
        need = Pt * max(4 * k.world, 16) * 1.5
        what, formula = "optimizer states", f"P_t × max(4 × {k.world} GPUs, 16) × 1.5"
    if k.offload_device == "nvme":
        return HostPlan(
            "nvme",
            int(need),
            f"{what} on NVMe (DeepSpeed ZeRO-Infinity); host RAM holds only pinned swap buffers",
        )
    return HostPlan("cpu", int(need), f"{what} in CPU memory: {formula} (DeepSpeed's estimator)")


def overhead_parts(parts: list[Part], k: Knobs | None = None) -> list[Part]:
    """What the process holds beyond PyTorch's allocations: the caching allocator's slack, the
    CUDA context and, with several ranks, NCCL's buffers."""
    allocated = sum(p.bytes for p in parts if p.at_peak)
    strategy = k.strategy if k is not None else "ddp"
    share = (
        FSDP_FRAGMENTATION
        if strategy.startswith("fsdp")
        else ZERO_FRAGMENTATION
        if strategy.startswith("zero")
        else FRAGMENTATION
    )
    out = [
        Part("allocator fragmentation", int(allocated * share), f"{share:.0%} of allocated"),
        Part("CUDA context", CONTEXT, "context + cuBLAS workspaces (outside PyTorch)"),
    ]
    if k is not None and k.world > 1:
        out.append(Part("NCCL buffers", NCCL, f"communicators of {k.world} ranks"))
    return out


def allocated(parts: list[Part]) -> int:
    """What PyTorch itself allocates at the peak (torch.cuda.max_memory_allocated)."""
    return sum(
        p.bytes
        for p in parts
        if p.at_peak
        and p.name not in ("allocator fragmentation", "CUDA context", "NCCL buffers")
        and not p.name.startswith("vLLM")
    )


# ---- generation -----------------------------------------------------------------------------
def vllm_parts(
    shape: ModelShape, k: Knobs, capacity: int | None, max_model_len: int | None, tp: int = 1
) -> tuple[list[Part], int | None, int | None]:
    """vLLM's reservation on one GPU; returns parts, the KV bytes one max_model_len sequence
    needs and the KV bytes the budget leaves (None where the capacity is unknown)."""
    tp = max(tp, 1)
    weights = shape.total_params() * 2 // tp
    seqs = 256 if k.vllm_mode != "colocate" else max(k.batch * k.steps_per_generation * tp, 1)
    profile = 8192 * (4 * shape.hidden + 2 * shape.intermediate) * 2 // tp + seqs * shape.vocab * 4 * 2
    graphs = 0 if k.vllm_enforce_eager else int(0.5 * GiB)
    overhead = profile + graphs + int(0.4 * GiB)
    kv_token = shape.kv_bytes_per_token_per_gpu(tp)
    need = kv_token * max_model_len if max_model_len else None
    if capacity is None:
        return (
            [
                Part("vLLM weights", weights, "bf16"),
                Part("vLLM activations + CUDA graphs", overhead, "profiling peak"),
            ],
            need,
            None,
        )
    budget = int(k.vllm_util * capacity)
    free = budget - weights - overhead
    parts = [
        Part("vLLM weights", weights, f"bf16{f' / TP {tp}' if tp > 1 else ''}"),
        Part("vLLM activations + CUDA graphs", overhead, "profiling peak, estimate"),
        Part("vLLM KV cache", max(free, 0), f"{max(free, 0) // max(kv_token, 1):,} tokens of {kv_token:,} B"),
    ]
    return parts, need, free


def asleep_parts() -> list[Part]:
    return [Part("vLLM (asleep)", int(1.0 * GiB), "sleep mode: weights and KV cache released")]
