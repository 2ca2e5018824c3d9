"""Read PyTorch's out-of-memory message and say why it happened on this machine.

Phrasings parsed (c10/cuda/CUDACachingAllocator.cpp): the current one, "CUDA out of memory. Tried
to allocate X. GPU N has a total capacity of T of which F is free. [Process P has U memory in use.
…] [Including non-PyTorch memory, this process has U memory in use.] [L allowed; ]Of the allocated
memory A is allocated by PyTorch, [with G allocated in private pools (e.g., CUDA Graphs), ]and R is
reserved by PyTorch but unallocated." (HIP, generic "Out of memory." and the "capacty" typo too);
the older "Tried to allocate X (GPU N; T total capacity; A already allocated; F free; [L allowed; ]
R reserved in total by PyTorch)"; and the bare "CUDA error: out of memory".

The causes, in the order they are judged: a memory cap (HAMi's vGPU limit in the log, or the
message's "allowed"), a generation GPU shared with training (from the layout or TRL's warning),
ranks of this job on one GPU (several ranks failed on the same GPU, and the processes listed are
no more than the job's other ranks), colocated vLLM's share (much memory held by the process
outside PyTorch's allocator), fragmentation (only when the reserved-but-unallocated memory is what
was missing and outweighs the memory held outside PyTorch), another process holding the GPU
(named, or the memory outside this process), or plain capacity (what to lower, on the vLLM or
training side; ``capacity_cause`` is where a plan-based explanation can refine it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envdoctor.checks.context import Context
from envdoctor.plan.memory.planner import fraction_caps_process
from envdoctor.triage import knobs
from envdoctor.triage.confirm import confirm, dataparallel, layout_given, shared_gpus
from envdoctor.triage.oomforms import HOST_LEVERS, PINNED_LEVERS, Form, vllm_levers
from envdoctor.triage.runkind import GRPO
from envdoctor.units import parse_size, size_text

_SIZE = r"([\d.]{1,20}) ?(bytes|[KMGT]i?B)"
_HEAD = re.compile(
    rf"(?:(CUDA|HIP|XPU) )?[Oo]ut of memory\. Tried to allocate {_SIZE}\. GPU "
    rf"(\d{{0,4}}) ?has a total capaci?ty of {_SIZE} of which {_SIZE} is free"
)
_ALLOWED = re.compile(rf"{_SIZE} allowed;")
_OTHER = re.compile(rf"Process (\d{{1,10}}) has {_SIZE} memory in use")
_SELF = re.compile(rf"this process has {_SIZE} memory in use")
_ALLOC = re.compile(
    rf"Of the allocated memory {_SIZE} is allocated by PyTorch, (?:with {_SIZE} "
    rf"allocated in private pools(?: \([^)]{{0,200}}\))?, )?and {_SIZE} is reserved by "
    "PyTorch but unallocated"
)
_OLD = re.compile(
    rf"Tried to allocate {_SIZE} \(GPU (\d{{1,4}}); {_SIZE} total capacity; {_SIZE} "
    rf"already allocated; {_SIZE} free;(?: {_SIZE} allowed;)? {_SIZE} reserved in "
    "total by PyTorch"
)

#: the message as it is quoted short ("torch.OutOfMemoryError: Tried to allocate 8.79 GiB. GPU 0 has
#: 79.10 GiB total, 4.98 GiB free."): the head and the allocator's words left out
_SHORT = re.compile(rf"Tried to allocate {_SIZE}\. GPU (\d{{0,4}}) ?has {_SIZE} total, {_SIZE} free")


#: live tensors (allocated by PyTorch) at or above this share of the GPU make an OOM a capacity
#: problem even when fragmentation failed the last request: measured on an H100 (docs/validation/
#: memory-gpu-h100.md, shape s10), a step the memory plan sized at 82 GiB died at 76.4 of 79.2 GiB
#: allocated with 1.98 GiB reserved but unallocated
LIVE_FULL = 0.95


def _mib(value: str, unit: str) -> float:
    """A size of the message in MiB; 0.0 when it is not a number (``1.2.3 GiB``)."""
    return parse_size(value, unit, default="MiB", into="MiB") or 0.0


@dataclass
class Oom:
    """The numbers of one out-of-memory message, in MiB (None where the message has none)."""

    gpu: int | None = None  # the CUDA ordinal of the process that failed
    want_mib: float | None = None
    total_mib: float | None = None
    free_mib: float | None = None
    allowed_mib: float | None = None
    allocated_mib: float | None = None  # by PyTorch
    unallocated_mib: float | None = None  # reserved by PyTorch but unallocated
    self_mib: float | None = None  # the failing process, non-PyTorch memory included
    others: dict[int, float] = field(default_factory=dict)  # pid -> MiB of other processes
    self_pid: int | None = None  # a "Process N" entry taken for the failing process itself
    reserved_mib: float | None = None  # by PyTorch (allocated + reserved-but-unallocated)

    @property
    def non_pytorch_mib(self) -> float | None:
        """What the failing process holds outside PyTorch's allocator (a colocated vLLM, NCCL,
        the CUDA context), when the message gives both numbers."""
        if self.self_mib is None or self.reserved_mib is None:
            return None
        return max(self.self_mib - self.reserved_mib, 0.0)

    @property
    def outside_mib(self) -> float | None:
        """The GPU's memory held outside this process's PyTorch allocator: total − free −
        reserved (other processes and this process's non-PyTorch memory)."""
        if None in (self.total_mib, self.free_mib, self.reserved_mib):
            return None
        return max(self.total_mib - self.free_mib - self.reserved_mib, 0.0)  # type: ignore[operator]


def parse_oom(text: str) -> Oom | None:
    """The numbers of an out-of-memory message, or None when ``text`` holds none."""
    m = _HEAD.search(text)
    if m:
        g = m.groups()
        oom = Oom(
            gpu=int(g[3]) if g[3] else None,
            want_mib=_mib(g[1], g[2]),
            total_mib=_mib(g[4], g[5]),
            free_mib=_mib(g[6], g[7]),
        )
        a = _ALLOC.search(text)
        if a:
            oom.allocated_mib = _mib(a.group(1), a.group(2))
            oom.unallocated_mib = _mib(a.group(5), a.group(6))
            oom.reserved_mib = oom.allocated_mib + oom.unallocated_mib
        s = _SELF.search(text)
        oom.self_mib = _mib(*s.groups()) if s else None
        oom.others = {int(p.group(1)): _mib(p.group(2), p.group(3)) for p in _OTHER.finditer(text)}
        _find_self(oom)
    else:
        m = _OLD.search(text)
        if m:
            g = m.groups()
            reserved, allocated = _mib(g[11], g[12]), _mib(g[5], g[6])
            oom = Oom(
                gpu=int(g[2]),
                want_mib=_mib(g[0], g[1]),
                total_mib=_mib(g[3], g[4]),
                allocated_mib=allocated,
                free_mib=_mib(g[7], g[8]),
            )
            oom.unallocated_mib = max(reserved - allocated, 0.0)
            oom.reserved_mib = reserved
        elif short := _SHORT.search(text):
            g = short.groups()
            oom = Oom(
                gpu=int(g[2]) if g[2] else None,
                want_mib=_mib(g[0], g[1]),
                total_mib=_mib(g[3], g[4]),
                free_mib=_mib(g[5], g[6]),
            )
        elif "out of memory" in text.lower() or "OutOfMemoryError" in text or _gpu_form(text):
            oom = _fragment(text)
        else:
            return None
    allowed = _ALLOWED.search(text)
    oom.allowed_mib = _mib(*allowed.groups()) if allowed else None
    return oom


#: the numbers a message quoted in part still shows ("Tried to allocate 18.91 GiB ... 3.74 GiB free ...
#: 19.68 GiB reserved by PyTorch but unallocated"): each read where it is, none guessed
_WANT = re.compile(rf"Tried to allocate {_SIZE}")
_FREE = re.compile(rf"{_SIZE}(?: is)? free\b")
_UNALLOCATED = re.compile(rf"{_SIZE}(?: is)? reserved by PyTorch but unallocated")
_ALLOCATED = re.compile(rf"{_SIZE}(?: is)? allocated by PyTorch")


def _gpu_form(text: str) -> bool:
    """A library's words for the GPU's memory used up (``CUBLAS_STATUS_ALLOC_FAILED``)."""
    from envdoctor.triage.oomforms import find

    form = find(text)
    return form is not None and form.memory == "gpu"


def _fragment(text: str) -> Oom:
    """An out-of-memory message in none of the shapes above: the numbers it shows, each by its words."""
    oom = Oom()
    for rx, attr in (
        (_WANT, "want_mib"),
        (_FREE, "free_mib"),
        (_UNALLOCATED, "unallocated_mib"),
        (_ALLOCATED, "allocated_mib"),
    ):
        m = rx.search(text)
        if m:
            setattr(oom, attr, _mib(m.group(1), m.group(2)))
    return oom


def _find_self(oom: Oom) -> None:
    """In a container NVML's pids differ from ``getpid()``, so torch lists the failing process as
    "Process N" too: take the entry whose use matches PyTorch's reservation plus a CUDA context."""
    if oom.self_mib is not None or oom.allocated_mib is None or not oom.others:
        return
    reserved = oom.allocated_mib + (oom.unallocated_mib or 0.0)
    fits = {
        pid: mib - reserved
        for pid, mib in oom.others.items()
        if 0 <= mib - reserved <= max(2048.0, 0.15 * reserved)
    }
    if fits:
        pid = min(fits, key=fits.__getitem__)
        oom.self_pid, oom.self_mib = pid, oom.others.pop(pid)


def size(mib: float | None) -> str:
    """MiB as triage writes them: ``2.00 GiB``, ``412 MiB``, ``?``."""
    return size_text(mib, of="MiB", digits=2, step_down=True)


@dataclass
class OomCause:
    """Why one OOM happened: ``cause`` is shared, fragmentation, other-process or capacity."""

    cause: str
    rule: str
    message: str
    fix: str
    evidence: dict[str, Any] = field(default_factory=dict)
    why: str = ""  # the message without its numbers: the cause in words


def _physical(oom: Oom, ctx: Context | None, vllm_side: bool) -> int | None:
    """The NVML index of the GPU that ran out (the message gives the process's CUDA ordinal)."""
    if ctx is None or oom.gpu is None or not ctx.facts.gpus:
        return None
    lay = ctx.layout
    pool = lay.generation if vllm_side and lay.generation_mode == "server" else lay.visible
    return pool[oom.gpu] if oom.gpu < len(pool) else None


def _names(ctx: Context | None) -> dict[int, str]:
    if ctx is None:
        return {}
    return {p.pid: p.name[:40] for g in ctx.facts.gpus for p in g.processes if p.name}


def processes_now(ctx: Context | None, physical: int | None) -> tuple[list[str], float]:
    """The processes NVML lists on GPU ``physical`` of the judged machine, and their MiB."""
    gpu = ctx.facts.gpu(physical) if ctx is not None and physical is not None else None
    if gpu is None or not gpu.processes:
        return [], 0.0
    return (
        [f"pid {p.pid} {p.name[:40] or '?'} ({size(p.used_mib)}, running now)" for p in gpu.processes],
        float(sum(p.used_mib or 0 for p in gpu.processes)),
    )


def _holders(oom: Oom, ctx: Context | None, physical: int | None) -> tuple[list[str], float]:
    """Other processes on the GPU at the crash (from the message), else NVML's list now.
    Entries of 0 bytes (NVML could not read their use) hold nothing that counts."""
    if oom.others:
        names = _names(ctx)
        held = {pid: mib for pid, mib in oom.others.items() if mib > 0}
        return (
            [
                f"pid {pid}{' ' + names[pid] if pid in names else ''} ({size(mib)})"
                for pid, mib in held.items()
            ],
            sum(held.values()),
        )
    if oom.self_mib is not None:
        return [], 0.0  # torch listed the GPU's processes at the crash: no other was there
    return processes_now(ctx, physical)


def _head(oom: Oom, physical: int | None, form: Form | None = None) -> str:
    if oom.want_mib is None:
        who = f" in {form.allocator}" if form is not None and form.id != "torch-caching-allocator" else ""
        what = "CUDA out of memory" if form is None or form.gpu else "Out of memory"
        return f"{what}{who} (the message gives no numbers)"
    where = (f"GPU {oom.gpu}" if oom.gpu is not None else "the GPU (the message names none)") + (
        f" (NVML GPU {physical})" if physical not in (None, oom.gpu) else ""
    )
    head = f"CUDA out of memory on {where}: tried to allocate {size(oom.want_mib)}" + (
        f" with {size(oom.free_mib)} free" if oom.free_mib is not None else ""
    )
    if oom.total_mib is not None:
        head += f" of {size(oom.total_mib)}"
    if oom.allocated_mib is not None:
        head += (
            f"; PyTorch had {size(oom.allocated_mib)} allocated and "
            f"{size(oom.unallocated_mib)} reserved but unallocated"
        )
    return head


def _expandable_on(ctx: Context | None) -> bool:
    if ctx is None:
        return False
    from envdoctor.plan.alloc_conf import parse_alloc_conf
    from envdoctor.plan.layout import trainer_env

    env = trainer_env(ctx.facts, ctx.plan.trainer)
    return any(
        parse_alloc_conf(env[v]).expandable_segments
        for v in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
        if v in env
    )


def capacity_fix(ctx: Context | None, vllm_side: bool, physical: int | None, kind: str | None = GRPO) -> str:
    """What to lower so the step fits, named as the installed TRL names it. ``kind``: the training
    the log shows (``runkind``): GRPO's levers (completion length, generations) in a GRPO run
    only; the installed TRL's defaults speak for a GRPO run configured by it only."""
    mode = ctx.layout.generation_mode if ctx is not None and layout_given(ctx) else None
    util = knobs.setting(ctx, "vllm_gpu_memory_utilization")
    max_len = knobs.setting(ctx, "vllm_max_model_length", "vllm_max_model_len")
    if vllm_side and mode == "server":
        return (
            "restart `trl vllm-serve` with a lower --gpu_memory_utilization, --max_model_len "
            "or --max_num_seqs, or give it more GPUs (--tensor_parallel_size)"
        )
    if vllm_side:
        parts = [f"lower {util}", max_len, "or vLLM's max_num_seqs"]
        tail = (
            "; or move generation to its own GPUs (vllm_mode: server + trl vllm-serve)"
            if mode != "colocate"
            else "; or enable vllm_enable_sleep_mode"
            if knobs.offered(ctx, "vllm_enable_sleep_mode")
            else ""
        )
        return ", ".join(parts) + tail
    if kind != GRPO:
        return _training_fix(ctx, kind)
    batch = knobs.setting(ctx, "per_device_train_batch_size")
    fix = (
        f"lower {batch} — raise gradient_accumulation_steps to keep the batch — or "
        if knobs.value(ctx, "per_device_train_batch_size")[0] != 1
        else "lower "
    )
    fix += f"{knobs.setting(ctx, 'max_completion_length')} or num_generations"
    if knobs.value(ctx, "gradient_checkpointing")[0] is not True:
        fix += f"; enable {knobs.setting(ctx, 'gradient_checkpointing')}"
    if mode == "colocate" and ctx is not None and physical in ctx.layout.generation:
        fix += f"; vLLM is colocated on this GPU: lower {util}" + (
            " or enable vllm_enable_sleep_mode" if knobs.offered(ctx, "vllm_enable_sleep_mode") else ""
        )
    return fix + "; or shard the model (DeepSpeed ZeRO-3 / FSDP)"


def _training_fix(ctx: Context | None, kind: str | None) -> str:
    """The levers of a training step that generates nothing (SFT, DPO, a plain Trainer), or of one
    the log does not name: activations first (gradient checkpointing), then the batch and the
    sequence, the weights' dtype, sharding; GRPO's own levers only as such where the log names no
    trainer. The config's values where given (TRL's defaults are not this run's)."""
    given = ctx.config if ctx is not None else {}
    parts = []
    if given.get("gradient_checkpointing") is not True:
        parts.append("enable gradient_checkpointing (activations are recomputed instead of kept)")
    batch = given.get("per_device_train_batch_size")
    if batch != 1:
        parts.append(
            "lower per_device_train_batch_size"
            + (f" ({batch} in the config)" if batch is not None else "")
            + " — raise gradient_accumulation_steps to keep the batch — or the sequence length "
            "(max_length / max_seq_length)"
        )
    else:
        parts.append("lower the sequence length (max_length / max_seq_length)")
    parts.append("load the weights in bfloat16 where they load in float32")
    if kind is None:
        parts.append("in a GRPO run, also lower max_completion_length or num_generations")
    parts.append("or shard the model (DeepSpeed ZeRO-3 / FSDP, with CPU offload)")
    return "; ".join(parts)


def _shared_fix(ctx: Context) -> tuple[str, str]:
    rule = "LAY003" if dataparallel(ctx.layout) else "LAY006"
    fired = confirm({"rules": (rule,)}, ctx).findings
    return rule, fired[0].fix if fired else f"give vLLM a GPU of its own (see envdoctor explain {rule})"


@dataclass
class OomLog:
    """What the rest of the log says about an out-of-memory error (besides its own numbers)."""

    vllm_side: bool = False  # raised inside vLLM (its frames, its process, its KV cache)
    shared_index: int | None = None  # the CUDA ordinal TRL warned both trains and runs vLLM
    dataparallel_seen: bool = False  # nn.DataParallel in the traceback
    colocated: bool = False  # vLLM runs inside the training processes (vllm_mode colocate)
    cap: tuple[int, float, float] | None = None  # HAMi: (device, bytes wanted, cap in bytes)
    sibling_ranks: list[int] = field(default_factory=list)  # ranks of this job OOM on one GPU
    world_size: int = 0  # the ranks the log (or the layout) shows
    unseen: bool = False  # the log shows no frame and nothing of a run: which program OOM'd is not said
    trainer: str | None = None  # the training the log shows (runkind: grpo, offline; None: not said)
    form: Form | None = None  # the message's form (oomforms): who allocated the memory that ran out
    #: the log names an inference engine colocated with training in processes of its own (verl's
    #: hybrid engine, OpenRLHF's / SkyRL's colocated vLLM actors, a ``colocate`` test of them):
    #: what it says, else ""
    engine_beside: str = ""


def _result(cause: str, rule: str, head: str, why: str, fix: str, evidence: dict[str, Any]) -> OomCause:
    evidence["cause"] = cause
    return OomCause(cause, rule, f"{head}: {why}", fix, evidence, why)


def _util_fix(ctx: Context | None, oom: Oom) -> str:
    """Lower vLLM's share by what the failed request lacked (with this run's value if known)."""
    name = knobs.pick(ctx, "vllm_gpu_memory_utilization")
    value, _ = knobs.value(ctx, name)
    lacked = max((oom.want_mib or 0.0) - (oom.free_mib or 0.0), 0.0) + 1024.0
    share = lacked / oom.total_mib if oom.total_mib else None
    if isinstance(value, (int, float)) and share is not None and value - share > 0.05:
        target = max(round(value - share - 0.005, 2), 0.05)
        return f"lower {name} from {value} to {target:.2f} or less"
    if share is not None:
        return f"lower {name} by at least {share:.2f} (of the GPU)"
    return f"lower {name}"


def _siblings(oom: Oom, log: OomLog) -> bool:
    """Ranks of this job on the OOM'd GPU: several ranks failed on the same CUDA ordinal and the
    processes the message lists are no more than the job's other ranks."""
    listed = [pid for pid, mib in oom.others.items() if mib > 0]
    return (
        len(log.sibling_ranks) >= 2
        and bool(listed)
        and len(listed) + 1 <= max(log.world_size, len(log.sibling_ranks))
    )


#: a CUDA context with a few buffers: what a rank that merely touched a GPU holds there
CONTEXT_MAX_MIB = 2048


def _context_crowd(oom: Oom, log: OomLog) -> list[int]:
    """The listed processes when they look like this job's other ranks, each holding just a CUDA
    context on the OOM'd GPU: two or more, the same small amount each (±10 %), pids close together
    (started by one launcher), and no more of them than the job has other ranks (where known).
    Otherwise empty. Seen in rwth-i6/returnn#1469: 15 processes × 1.19 GiB on GPU 0 of a 16-rank
    job, fixed by torch.cuda.set_device."""
    listed = sorted(pid for pid, mib in oom.others.items() if mib > 0)
    if len(listed) < 2:
        return []
    sizes = [oom.others[p] for p in listed]
    if max(sizes) > CONTEXT_MAX_MIB or max(sizes) > 1.1 * min(sizes):
        return []
    if listed[-1] - listed[0] > 8 * len(listed):  # not one launcher's children
        return []
    if log.world_size and len(listed) + 1 > log.world_size:
        return []
    return listed


@dataclass
class _Judged:
    """One OOM with what the causes weigh: the message's numbers, the machine and plan (``ctx``),
    what the rest of the log says (``log``) and the lines before the message (``context``)."""

    oom: Oom
    ctx: Context | None
    log: OomLog
    context: list[str] | None
    physical: int | None = None  # the NVML index of the GPU that ran out
    head: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    holders: list[str] = field(default_factory=list)  # other processes on the GPU
    held_mib: float = 0.0  # what they hold
    missing: float = 0.0  # what the request lacked
    unalloc: float = 0.0  # reserved by PyTorch but unallocated
    non_pytorch: float | None = None  # held by this process outside PyTorch's allocator
    frag: bool = False  # the reserved-but-unallocated memory is what was missing
    busy: bool = False  # other processes hold what was missing
    big: float = 0.0  # memory outside PyTorch that is a story of its own
    colocated: bool = False  # vLLM runs inside the training processes
    kind: str | None = None  # the training: the log's, else GRPO where a (GRPO) config is given

    def __post_init__(self) -> None:
        oom, ctx = self.oom, self.ctx
        self.kind = self.log.trainer or (GRPO if ctx is not None and ctx.config else None)
        self.physical = _physical(oom, ctx, self.vllm_side)
        self.head = _head(oom, self.physical, self.log.form)
        self.evidence = {
            "gpu": oom.gpu,
            "physical_gpu": self.physical,
            "vllm_side": self.vllm_side,
            "oom_form": self.log.form.id if self.log.form is not None else None,
            "want_mib": _round(oom.want_mib),
            "free_mib": _round(oom.free_mib),
            "total_mib": _round(oom.total_mib),
            "unallocated_mib": _round(oom.unallocated_mib),
            "non_pytorch_mib": _round(oom.non_pytorch_mib),
            "other_processes": {p: _round(m) for p, m in oom.others.items()},
        }
        self.holders, self.held_mib = _holders(oom, ctx, self.physical)
        want, free = oom.want_mib or 0.0, oom.free_mib or 0.0
        self.missing = max(want - free, 0.0)
        self.unalloc = oom.unallocated_mib or 0.0
        self.non_pytorch = oom.non_pytorch_mib
        if self.non_pytorch is None and not oom.others and oom.self_mib is None:
            self.non_pytorch = oom.outside_mib  # older message: no process list, one number outside
        outside_total = (self.non_pytorch or 0.0) + self.held_mib
        self.frag = (
            oom.unallocated_mib is not None
            and self.unalloc >= max(self.missing, 256.0)
            and self.unalloc >= outside_total
        )
        self.busy = (
            bool(self.holders)
            and self.held_mib + free >= want
            and (self.held_mib >= 0.05 * (oom.total_mib or 0.0) or not oom.others)
        )
        self.big = max(2048.0, 0.1 * (oom.total_mib or 0.0))
        self.colocated = self.log.colocated or (
            ctx is not None and layout_given(ctx) and ctx.layout.generation_mode == "colocate"
        )

    @property
    def vllm_side(self) -> bool:
        return self.log.vllm_side

    @property
    def live(self) -> float:
        """The share of the GPU live tensors (allocated by PyTorch) held."""
        oom = self.oom
        return oom.allocated_mib / oom.total_mib if oom.allocated_mib and oom.total_mib else 0.0

    def capacity_fix(self) -> str:
        return capacity_fix(self.ctx, self.vllm_side, self.physical, self.kind)

    def result(self, cause: str, rule: str, why: str, fix: str) -> OomCause:
        return _result(cause, rule, self.head, why, fix, self.evidence)


def _vgpu_cap(j: _Judged) -> OomCause | None:
    """HAMi's vGPU limit, from the log: the cap is the job's memory."""
    if j.log.cap is None:
        return None
    device, used, limit = j.log.cap
    return j.result(
        "vgpu-cap",
        "TRI001",
        f"HAMi's vGPU cap of {size_text(limit, digits=2)} on device {device} is this "
        f"job's memory, not the GPU's {size(j.oom.total_mib)} (it needed "
        f"{size_text(used, digits=2)})",
        knobs.vgpu_cap_fix(used, j.capacity_fix()),
    )


def _allowed_cap(j: _Judged) -> OomCause | None:
    """The message's "allowed": a per-process fraction or a vGPU limit below the GPU."""
    oom = j.oom
    if oom.allowed_mib is None or oom.allowed_mib >= (oom.total_mib or 0.0) * 0.98:
        return None
    return j.result(
        "allowed-cap",
        "TRI001",
        f"this process may use {size(oom.allowed_mib)} of the GPU "
        "(torch.cuda.set_per_process_memory_fraction or a vGPU limit): that cap "
        "is the budget",
        "raise the cap, or make the step fit it: " + j.capacity_fix(),
    )


def _shared_gpu(j: _Judged) -> OomCause | None:
    """A generation GPU that also trains (from the layout, or TRL's warning in the log)."""
    ctx, oom, log = j.ctx, j.oom, j.log
    layout = ctx.layout if ctx is not None and layout_given(ctx) else None
    shared = layout is not None and j.physical in shared_gpus(layout)
    if not (shared or oom.gpu is not None and oom.gpu == log.shared_index):
        return None
    trap = log.dataparallel_seen or layout is not None and dataparallel(layout)
    rule, fix = (
        _shared_fix(ctx)
        if ctx is not None and layout is not None
        else (
            "LAY003" if trap else "LAY006",
            "launch with torchrun --nproc_per_node N (one process per training GPU), or make only "
            "the training GPUs visible"
            if trap
            else "give vLLM a GPU of its own: one more visible GPU than training processes",
        )
    )
    why = "this GPU runs vLLM and also gets training memory" + (
        ": one process sees several GPUs, so Trainer's nn.DataParallel put a replica "
        "here (the DataParallel trap)"
        if trap
        else " (vLLM's device is a training GPU)"
    )
    return j.result("shared", rule, why, fix)


def _ranks_as_contexts(j: _Judged) -> OomCause | None:
    """The other processes listed are this job's ranks, each holding a CUDA context here."""
    oom = j.oom
    crowd = _context_crowd(oom, j.log)
    if not crowd:
        return None
    n, each = len(crowd), oom.others[crowd[0]]
    return j.result(
        "ranks-on-one-gpu",
        "TRI006",
        f"{n} other processes hold the same {size(each)} each on GPU {oom.gpu} "
        f"(pids {crowd[0]}–{crowd[-1]}, started together): the CUDA contexts of "
        f"this job's other ranks, each of which touched GPU {oom.gpu} before (or "
        "instead of) its own device; not another tenant",
        knobs.RANK_DEVICE,
    )


def _sibling_ranks(j: _Judged) -> OomCause | None:
    """Several ranks of this job ran out of memory on one GPU, and it held only them."""
    oom, log = j.oom, j.log
    if not _siblings(oom, log):
        return None
    pids = ", ".join(f"pid {p} ({size(m)})" for p, m in oom.others.items() if m > 0)
    ranks = ", ".join(map(str, log.sibling_ranks[:16]))
    return j.result(
        "ranks-on-one-gpu",
        "TRI006",
        f"ranks {ranks} of this job all ran out of memory on GPU {oom.gpu}; the "
        f"other processes on it ({pids}) are this job's ranks, not another tenant",
        knobs.RANK_DEVICE,
    )


def _colocated_outside(j: _Judged) -> OomCause | None:
    """Colocated vLLM holding much memory outside PyTorch's allocator in the training process."""
    np_ = j.non_pytorch
    if not (j.colocated and not j.vllm_side and np_ is not None and np_ >= j.big and np_ >= j.unalloc):
        return None
    ctx = j.ctx
    return j.result(
        "vllm-share",
        "TRI001",
        f"{size(np_)} of it is held by this process outside PyTorch's "
        f"allocator: the colocated vLLM engine's weights, KV cache and CUDA graphs "
        f"(its share is {knobs.setting(ctx, 'vllm_gpu_memory_utilization')}), so "
        f"training lacked {size(j.missing)}",
        f"{_util_fix(ctx, j.oom)}; "
        + (
            "or enable vllm_enable_sleep_mode (vLLM releases its memory while training steps run); "
            if knobs.offered(ctx, "vllm_enable_sleep_mode")
            else ""
        )
        + "or move generation to its own GPUs (vllm_mode: server with trl "
        "vllm-serve)",
    )


def _optimizer_states(j: _Judged) -> OomCause | None:
    """An optimizer step in the lines before: the memory plan says what did not fit."""
    if j.vllm_side or j.ctx is None or not j.context:
        return None
    from envdoctor.plan.memory.oom import explain_optimizer_oom

    planned = explain_optimizer_oom(j.ctx, j.oom.allocated_mib, j.oom.total_mib, j.context)
    if planned is None:
        return None
    j.evidence.update(planned[2])
    return j.result("optimizer-states", "MEM101", planned[0], planned[1])


def _colocated_inside(j: _Judged) -> OomCause | None:
    """Colocated vLLM's share inside PyTorch's allocations (fragmentation answers first only
    where it is what failed on a GPU not yet full)."""
    inside = _inside_share(j.oom, j.ctx) if j.colocated and not j.vllm_side else None
    if inside is None or j.frag and j.live < LIVE_FULL and not _expandable_on(j.ctx):
        return None
    j.evidence["vllm_share_mib"] = _round(inside[0])
    return j.result("vllm-share", "TRI001", *_inside_cause(j.oom, j.ctx, inside, j.physical))


def _fragmentation(j: _Judged) -> OomCause | None:
    """Reserved-but-unallocated memory is what was missing (unless the GPU is full anyway, or
    expandable segments are already on)."""
    if not j.frag:
        return None
    unalloc, ctx = j.unalloc, j.ctx
    if _expandable_on(ctx):
        return j.result(
            "capacity",
            "TRI001",
            f"{size(unalloc)} is reserved but fragmented even with expandable_segments on",
            j.capacity_fix(),
        )
    live = j.live
    if live >= LIVE_FULL and not j.vllm_side:
        j.evidence["live_share"] = round(live, 3)
        return j.result(
            "capacity",
            "TRI001",
            f"live tensors already hold {live:.0%} of the GPU; the {size(unalloc)} "
            f"reserved but unallocated is fragmentation that failed this "
            f"{size(j.missing)} request, but the step is at the GPU's limit",
            j.capacity_fix() + "; "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True gains at most "
            f"{size(unalloc)}",
        )
    why = (
        f"{size(unalloc)} was reserved by PyTorch but unallocated, more than the "
        f"{size(j.missing)} that was missing: the caching allocator's memory is fragmented"
    )
    fix = "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    if ctx is not None and ctx.config.get("vllm_enable_sleep_mode"):
        fix += " (not with vllm_enable_sleep_mode on torch 2.7–2.9: see envdoctor explain ALC004)"
    return j.result("fragmentation", "TRI001", why, fix)


def _engine_beside(j: _Judged) -> OomCause | None:
    """Other processes hold the memory, and the log's run colocates its inference engine with
    training in processes of its own: they are this job's engines, awake while training allocates,
    not another tenant (stopping them stops the job)."""
    if not (j.log.engine_beside and j.busy and not j.vllm_side):
        return None
    j.evidence["holders"] = j.holders
    return j.result(
        "engine-beside",
        "TRI001",
        f"other processes hold {size(j.held_mib)} of it ({', '.join(j.holders)}), and the run colocates "
        f"its inference engine with training ({j.log.engine_beside}): those are this job's own engine "
        "processes, holding their gpu_memory_utilization share while training allocates",
        "put the colocated engines to sleep (vLLM's sleep mode: enable_sleep_mode and sleep() / "
        "wake_up() around each training phase) before training loads or updates weights, or lower the "
        "engines' gpu_memory_utilization until training's peak fits beside them",
    )


def _other_process(j: _Judged) -> OomCause | None:
    """Other processes hold the memory (named), or much of it is outside this process's
    allocator with no process list to say whose."""
    oom, ctx, np_ = j.oom, j.ctx, j.non_pytorch
    outside = (
        not j.holders
        and not oom.others
        and oom.self_mib is None
        and not j.vllm_side
        and np_ is not None
        and np_ >= j.big
    )
    if not (j.busy or outside):
        return None
    free_gpus = (
        [g.index for g in ctx.facts.gpus if not g.processes and g.index != j.physical]
        if ctx is not None
        else []
    )
    move = (
        f"CUDA_VISIBLE_DEVICES={','.join(map(str, free_gpus))}"
        if free_gpus
        else "CUDA_VISIBLE_DEVICES=<a free GPU>, set before torch is imported"
    )
    if j.busy:
        j.evidence["holders"] = j.holders
        why = f"other processes hold {size(j.held_mib)} of it: {', '.join(j.holders)}"
    else:
        why = (
            f"{size(np_)} of it was held outside this process's PyTorch allocator "
            "(other processes, or this process's own non-PyTorch memory)"
        )
    return j.result(
        "other-process",
        "MEM001" if j.vllm_side else "MEM002",
        why,
        f"stop them (nvidia-smi shows them), or move this job to GPUs no one else uses: {move}",
    )


#: the causes in the order they are judged: the first that answers is the cause; none
#: answering is plain capacity (``capacity_cause``)
CAUSES: tuple[Callable[[_Judged], OomCause | None], ...] = (
    _vgpu_cap,
    _allowed_cap,
    _shared_gpu,
    _ranks_as_contexts,
    _sibling_ranks,
    _colocated_outside,
    _optimizer_states,
    _colocated_inside,
    _fragmentation,
    _engine_beside,
    _other_process,
)


def classify(
    oom: Oom, ctx: Context | None = None, log: OomLog | None = None, context: list[str] | None = None
) -> OomCause:
    """Why ``oom`` happened, and the fix. ``log`` says what the rest of the log shows: the vLLM
    side, TRL's shared-GPU warning, nn.DataParallel, colocated vLLM, HAMi's cap, and the ranks
    that failed on the same GPU; ``context``, the lines before the message (an optimizer step
    there asks the memory plan)."""
    j = _Judged(oom, ctx, log or OomLog(), context)
    if j.log.form is not None and j.log.form.memory == "pinned":
        return j.result(
            "pinned",
            "TRI018",
            "the lines before it pin host memory: page-locked host memory ran out, not the GPU's",
            PINNED_LEVERS,
        )
    for cause in CAUSES:
        found = cause(j)
        if found is not None:
            return found
    if j.log.form is not None and j.log.form.side == "vllm":
        return j.result(
            "capacity",
            "MEM001",
            "vLLM's share of the GPU (its weights and KV cache, mapped at start and again at each "
            "wake_up from sleep mode) did not fit beside what the GPU already held (the training "
            "side's memory, on a GPU they share); before vllm-project/vllm#12981 wake_up returned "
            "after this printed error and the engine died later (an illegal memory access)",
            vllm_levers(ctx, j.log.form),
        )
    if j.log.unseen and not j.vllm_side:
        return unseen_cause(oom, ctx, j.physical, j.result, j.kind)
    return capacity_cause(oom, ctx, j.vllm_side, j.physical, j.result, j.kind)


#: a colocated vLLM whose share is at least this part of what PyTorch had allocated is the story
INSIDE_SHARE = 0.4


def _inside_share(oom: Oom, ctx: Context | None) -> tuple[float | None, str, Any] | None:
    """vLLM colocated inside the training process allocates through PyTorch (TRL 1.16 + vLLM
    0.26: 138.74 of 139.80 GiB "allocated by PyTorch" with 0.85 of the GPU given to vLLM,
    docs/validation/grpo-colocate-oom-h200.log). When that share is a large part of a GPU at
    least half allocated: (vLLM's share in MiB, None where the run's fraction is unknown; the
    knob's name; the fraction)."""
    if not oom.allocated_mib or not oom.total_mib or oom.allocated_mib < 0.5 * oom.total_mib:
        return None
    name = knobs.pick(ctx, "vllm_gpu_memory_utilization")
    util, where = knobs.value(ctx, name)  # TRL's default is no evidence of what the run used
    if (
        where != "in the config"
        or not isinstance(util, (int, float))
        or isinstance(util, bool)
        or not 0 < util <= 1
    ):
        return None, name, None
    share = util * oom.total_mib
    return (share, name, util) if share >= INSIDE_SHARE * oom.allocated_mib else None


def _inside_cause(
    oom: Oom, ctx: Context | None, inside: tuple[float | None, str, Any], physical: int | None
) -> tuple[str, str]:
    """(why, fix) when a colocated vLLM's share inside PyTorch's allocations is the story."""
    share, name, util = inside
    total = oom.total_mib or 0.0  # known wherever a share was computed (_inside_share)
    if not share:
        held = f"vLLM's reservation ({name} × the GPU) is part of it"
    elif ctx is not None and fraction_caps_process(ctx):
        held = (
            f"{size(share)} of it is {name} {util} × {size(oom.total_mib)}, which vLLM "
            f"{ctx.facts.version('vllm')} fills with its own memory and what the process "
            "already held when it started (the model's weights), which left the training "
            f"step's growth {size(total - share)}"
        )
    else:
        held = (
            f"{size(share)} of it is vLLM's reservation ({name} {util} × "
            f"{size(oom.total_mib)}), which left the training step "
            f"{size(total - share)}"
        )
    why = (
        "vLLM runs inside this training process (colocate), so its weights, KV cache and CUDA "
        "graphs are PyTorch allocations too: " + held
    )
    fix = (
        f"lower {name}" + (f" from {util}" if share else "") + " to what generation needs "
        "(TRL's default is 0.3; `envdoctor plan-memory` sizes the training step beside it); "
        + (
            "or enable vllm_enable_sleep_mode (vLLM releases its memory while training steps run); "
            if knobs.offered(ctx, "vllm_enable_sleep_mode")
            else ""
        )
        + "or move generation to its own GPUs (vllm_mode: server with trl vllm-serve); "
        "if vLLM's share is already small, the step itself is too big: " + capacity_fix(ctx, False, physical)
    )
    return why, fix


def capacity_cause(
    oom: Oom, ctx: Context | None, vllm_side: bool, physical: int | None, result: Any, kind: str | None = GRPO
) -> OomCause:
    """The plain-capacity answer: what to lower (a plan-based explanation can refine it here)."""
    side = (
        "vLLM's weights, KV cache and CUDA graphs"
        if vllm_side
        else "the model, optimizer state and activations"
    )
    return result(
        "capacity",
        "MEM001" if vllm_side else "TRI001",
        f"{side} need more than the GPU has",
        capacity_fix(ctx, vllm_side, physical, kind),
    )


def unseen_cause(
    oom: Oom, ctx: Context | None, physical: int | None, result: Any, kind: str | None = GRPO
) -> OomCause:
    """An out-of-memory line and nothing else (no frame, no line of the run): a training step and a
    vLLM engine fail with the same message, so both answers are given, vLLM's first (it takes its
    share of the whole GPU up front: a share near 1 leaves nothing to anything else)."""
    return result(
        "capacity",
        "TRI001",
        "what this process runs needs more than the GPU has; the log shows no frame, so whether it "
        "is a vLLM engine (vllm serve, trl vllm-serve, LLM(...)) or a training step is not said",
        "if it is a vLLM engine: lower its gpu_memory_utilization (vLLM takes that share of the whole "
        "GPU up front; 0.7-0.9 leaves headroom), max_model_len or max_num_seqs; if it is the training "
        "step: " + capacity_fix(ctx, False, physical, kind),
    )


def _round(mib: float | None) -> float | None:
    return round(mib, 1) if mib is not None else None


def levers(
    form: Form, ctx: Context | None = None, vllm_side: bool | None = None, kind: str | None = None
) -> str:
    """What acts on the memory ``form`` says ran out: the host's RAM, its pinned memory, vLLM's share
    of the GPU, or the training step's memory (``kind``: the run's trainer, ``runkind``); where the
    side is not said, both GPU answers."""
    if form.memory == "host":
        return HOST_LEVERS
    if form.memory == "pinned":
        return PINNED_LEVERS
    side = vllm_side if vllm_side is not None else (True if form.side == "vllm" else None)
    if side is True:
        return vllm_levers(ctx, form)
    training = capacity_fix(ctx, False, None, kind)
    if side is False or form.side == "training":
        return training
    return f"if vLLM's engine allocated it: {vllm_levers(ctx, form)}; if the training step did: {training}"
