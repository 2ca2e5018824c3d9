"""Read PyTorch's CUDA out-of-memory message and tell why it happened.

Two phrasings exist: torch ≥ 2.1 ("Tried to allocate X. GPU N has a total capacity of T of which F
is free. … Of the allocated memory A is allocated by PyTorch, and R is reserved by PyTorch but
unallocated.") and older ("Tried to allocate X (GPU N; T total capacity; A already allocated;
F free; R reserved in total by PyTorch)").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SIZE = r"([\d.]+) ?([KMGT]?i?B)"
_NEW = re.compile(rf"Tried to allocate {_SIZE}\. GPU (\d+) has a total capacity of {_SIZE} of "
                  rf"which {_SIZE} is free")
_ALLOC = re.compile(rf"Of the allocated memory {_SIZE} is allocated by PyTorch, and {_SIZE} is "
                    r"reserved by PyTorch but unallocated")
_PROCS = re.compile(rf"Process (\d+) has {_SIZE} memory in use")
_OLD = re.compile(rf"Tried to allocate {_SIZE} \(GPU (\d+); {_SIZE} total capacity; {_SIZE} "
                  rf"already allocated; {_SIZE} free; {_SIZE} reserved in total by PyTorch")
_UNITS = {"B": 1 / 2**20, "KiB": 1 / 1024, "KB": 1 / 1024, "MiB": 1, "MB": 1, "GiB": 1024,
          "GB": 1024, "TiB": 2**20, "TB": 2**20}


def _mib(value: str, unit: str) -> float:
    return float(value) * _UNITS.get(unit, 1)


@dataclass
class Oom:
    gpu: int
    want_mib: float
    total_mib: float
    free_mib: float
    allocated_mib: float | None = None
    unallocated_mib: float | None = None  # reserved by PyTorch but unallocated
    processes: dict[int, float] = field(default_factory=dict)  # pid → MiB (torch ≥ 2.1)


def parse_oom(text: str) -> Oom | None:
    m = _NEW.search(text)
    if m:
        g = m.groups()
        oom = Oom(gpu=int(g[2]), want_mib=_mib(g[0], g[1]), total_mib=_mib(g[3], g[4]),
                  free_mib=_mib(g[5], g[6]))
        a = _ALLOC.search(text)
        if a:
            oom.allocated_mib = _mib(a.group(1), a.group(2))
            oom.unallocated_mib = _mib(a.group(3), a.group(4))
        for p in _PROCS.finditer(text):
            oom.processes[int(p.group(1))] = _mib(p.group(2), p.group(3))
        return oom
    m = _OLD.search(text)
    if m:
        g = m.groups()
        allocated = _mib(g[5], g[6])
        reserved = _mib(g[9], g[10])
        return Oom(gpu=int(g[2]), want_mib=_mib(g[0], g[1]), total_mib=_mib(g[3], g[4]),
                   free_mib=_mib(g[7], g[8]), allocated_mib=allocated,
                   unallocated_mib=max(reserved - allocated, 0.0))
    return None


def _gib(mib: float) -> str:
    return f"{mib / 1024:.2f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def explain(oom: Oom, physical: int | None, others: list[str], shared_with_vllm: bool,
            vllm_side: bool) -> tuple[str, str, str]:
    """(cause, message, fix) for one OOM, from its numbers and what the layout says."""
    head = (f"CUDA out of memory on GPU {oom.gpu}"
            + (f" (physical GPU {physical})" if physical is not None and physical != oom.gpu
               else "")
            + f": tried to allocate {_gib(oom.want_mib)} with {_gib(oom.free_mib)} free of "
            f"{_gib(oom.total_mib)}")
    if oom.unallocated_mib is not None:
        head += f"; {_gib(oom.unallocated_mib)} reserved by PyTorch but unallocated"
    if shared_with_vllm:
        return ("shared", head + ": this GPU is also the generation (vLLM) GPU of the layout — "
                "training memory landed there (the DataParallel trap, or vllm_device on a "
                "training GPU)",
                "give vLLM its own GPU: launch with torchrun --nproc_per_node N or set "
                "CUDA_VISIBLE_DEVICES to the training GPUs; see envdoctor explain LAY003")
    if others:
        return ("other-process", head + f": other processes hold this GPU: {', '.join(others)}",
                "stop those processes (nvidia-smi) or move the run to a free GPU")
    if oom.unallocated_mib is not None and oom.unallocated_mib >= max(oom.want_mib, 1024) \
            or oom.unallocated_mib is not None and oom.unallocated_mib >= 0.2 * oom.total_mib:
        return ("fragmentation", head + ": the caching allocator holds enough memory, but "
                "fragmented", "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    if vllm_side:
        return ("capacity", head + ": vLLM's reservation does not fit",
                "lower vllm_gpu_memory_utilization, max_model_len or max_num_seqs, or use "
                "vllm_mode=server on its own GPUs (or vllm_enable_sleep_mode in colocate mode)")
    return ("capacity", head + ": the model, optimizer state and activations need more than the GPU "
            "has", "lower per_device_train_batch_size (raise gradient_accumulation_steps), "
            "max_completion_length or num_generations; enable gradient_checkpointing; or use "
            "more GPUs (DeepSpeed ZeRO / FSDP)")
