"""Out of memory in every form a program prints it: which memory ran out and who allocated it.

The forms are data (``rules/triage/oom_forms.yaml``): PyTorch's caching allocator, a CUDA call
outside it, vLLM's CuMemAllocator, cuBLAS / cuDNN / NCCL / HIP, pinned host memory, and the host's
RAM (the kernel's OOM killer, Slurm's memory cgroup, Ray's memory monitor, PyTorch's CPU
allocator). ``find`` names the form of a line; ``levers`` says what acts on the memory that ran
out: vLLM's share of the GPU, the training step's memory (by trainer kind, ``oom.capacity_fix``),
the host's RAM, or its page-locked memory. Every reader of an out-of-memory line (``oom``'s
classification of TRI001 / MEM001, ``guards``' library allocations and Ray's memory monitor,
``toollines``' host kills) asks this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from envdoctor.resources import read_yaml, rules_dir

if TYPE_CHECKING:
    from envdoctor.checks.context import Context

SCHEMA = "envdoctor.oom_forms/1"
MEMORIES = ("gpu", "host", "pinned")
SIDES = ("training", "vllm", "any")
_KEYS = {"id", "memory", "side", "allocator", "pattern", "references", "context"}
MAX_TEXT = 8192  # characters of a line or message searched
#: the lines before a message a form's ``context`` is looked for in: the innermost frames of its
#: traceback, not another process's traceback further up
CONTEXT_LINES = 12


class OomFormError(ValueError):
    """The forms data breaks its schema (a bug in envdoctor's data, not the user's input)."""


@dataclass(frozen=True)
class Form:
    """One way a program prints that memory ran out."""

    id: str
    memory: str  # gpu | host | pinned
    side: str  # training | vllm | any
    allocator: str
    pattern: re.Pattern[str]
    context: re.Pattern[str] | None
    references: tuple[str, ...]

    @property
    def gpu(self) -> bool:
        return self.memory == "gpu"


def _regex(text: Any, where: str) -> re.Pattern[str]:
    from envdoctor.triage.signatures import check_linear

    if not isinstance(text, str) or not text:
        raise OomFormError(f"{where}: a regex is required")
    why = check_linear(text)
    if why:
        raise OomFormError(f"{where}: {why}")
    return re.compile(text)


def _form(raw: Any, i: int) -> Form:
    where = f"oom_forms.yaml form {i}"
    if not isinstance(raw, dict) or not set(raw) <= _KEYS:
        raise OomFormError(f"{where}: a mapping of {sorted(_KEYS)}")
    if raw.get("memory") not in MEMORIES or raw.get("side") not in SIDES:
        raise OomFormError(f"{where}: memory must be one of {MEMORIES}, side one of {SIDES}")
    refs = raw.get("references")
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) and r for r in refs):
        raise OomFormError(f"{where}: references must be a list of sources")
    if not isinstance(raw.get("id"), str) or not isinstance(raw.get("allocator"), str):
        raise OomFormError(f"{where}: id and allocator are required")
    return Form(
        raw["id"],
        raw["memory"],
        raw["side"],
        raw["allocator"],
        _regex(raw.get("pattern"), where),
        _regex(raw["context"], where) if "context" in raw else None,
        tuple(refs),
    )


@lru_cache(maxsize=1)
def forms() -> tuple[Form, ...]:
    """The shipped forms, in the order they are tried."""
    data = read_yaml(rules_dir() / "triage" / "oom_forms.yaml")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("forms"), list):
        raise OomFormError(f"oom_forms.yaml: schema {SCHEMA} with a list of forms expected")
    out = tuple(_form(raw, i) for i, raw in enumerate(data["forms"]))
    ids = [f.id for f in out]
    if len(set(ids)) != len(ids):
        raise OomFormError("oom_forms.yaml: ids must be unique")
    return out


def find(text: str, context: list[str] | tuple[str, ...] = (), memory: str | None = None) -> Form | None:
    """The form of the out-of-memory message in ``text`` (``context``: the lines before it, where
    a form needs them; ``memory``: only forms of that memory), or None."""
    text = text[:MAX_TEXT]
    before = "\n".join(x[:1000] for x in context[-CONTEXT_LINES:])
    for form in forms():
        if memory is not None and form.memory != memory:
            continue
        if form.pattern.search(text) and (form.context is None or form.context.search(before + "\n" + text)):
            return form
    return None


def by_id(form_id: str) -> Form:
    return next(f for f in forms() if f.id == form_id)


#: what acts on the host's RAM, whoever filled it
HOST_LEVERS = (
    "take load off the host's RAM: turn off the CPU offload the RAM cannot hold (DeepSpeed "
    "offload_optimizer / offload_param, FSDP cpu_offload, verl's param_offload / optimizer_offload), "
    "run fewer processes per node (data loader workers: dataloader_num_workers; rollout, actor or Ray "
    "workers), load the weights in smaller shards straight to the GPU (low_cpu_mem_usage / device_map), "
    "or give the job more RAM (Slurm's --mem, the container's memory limit, a larger node)"
)

#: what acts on page-locked host memory
PINNED_LEVERS = (
    "pin less host memory: dataloader_pin_memory: false (pin_memory=False in the DataLoader), DeepSpeed's "
    "offload_optimizer / offload_param pin_memory: false, or offload less; in a container raise the "
    "locked-memory limit (ulimit -l, docker --ulimit memlock=-1) and its memory limit"
)


def vllm_levers(ctx: Context | None, form: Form | None = None) -> str:
    """What acts on vLLM's GPU memory, named as the run names it (``vllm_gpu_memory_utilization`` in
    TRL's config, ``gpu_memory_utilization`` of vLLM's own engine and RL stacks)."""
    from envdoctor.triage import knobs

    trl = ctx is not None and bool(ctx.config)
    util = knobs.setting(ctx, "vllm_gpu_memory_utilization") if trl else "gpu_memory_utilization"
    max_len = knobs.setting(ctx, "vllm_max_model_length", "vllm_max_model_len") if trl else "max_model_len"
    fix = (
        f"lower vLLM's share of the GPU: {util}"
        + (
            ""
            if trl
            else " (TRL's vllm_gpu_memory_utilization, an RL stack's rollout gpu_memory_utilization)"
        )
        + f", or its {max_len} / max_num_seqs (a smaller KV cache); where the installed vLLM has it, "
        "kv_cache_memory_bytes fixes the KV cache's size (it takes precedence over gpu_memory_utilization, "
        "whose KV cache grows when a vLLM upgrade profiles less memory)"
    )
    if form is not None and form.id == "vllm-cumem":
        fix += (
            "; with sleep mode (enable_sleep_mode / vllm_enable_sleep_mode) at wake_up, free the training "
            "side's GPU memory first (offload the model and optimizer, torch.cuda.empty_cache()): vLLM maps "
            "its whole share back then"
        )
    elif knobs.offered(ctx, "vllm_enable_sleep_mode"):
        fix += "; or enable vllm_enable_sleep_mode (vLLM releases its memory while training steps run)"
    return fix


def what_ran_out(form: Form) -> str:
    """The memory in words."""
    return {
        "gpu": "the GPU's memory",
        "host": "the host's memory (RAM, not GPU memory)",
        "pinned": "page-locked (pinned) host memory",
    }[form.memory]
