"""Known failure texts of a GRPO step, mapped to rules and fixes (pure: text in, findings out)."""

from __future__ import annotations

import re

from envdoctor.findings import Finding, Severity

_OOM = re.compile(r"Tried to allocate (?P<want>[\d.]+ [KMG]iB)\. GPU (?P<gpu>\d+) has a total "
                  r"capacity of (?P<total>[\d.]+ [KMG]iB) of which (?P<free>[\d.]+ [KMG]iB) is free")
_SIGNATURES: list[tuple[str, re.Pattern[str], str, str]] = [
    ("PRB002", re.compile(r"does not support `nn\.DataParallel`"),
     "TRL refused to start: one process sees several GPUs, so transformers' Trainer would wrap "
     "the model in nn.DataParallel",
     "launch with torchrun --nproc_per_node N (one rank per GPU), or set CUDA_VISIBLE_DEVICES to "
     "the training GPUs"),
    ("LAY001", re.compile(r"The requested device for vllm \((?P<dev>cuda:\d+)\) is not available"),
     "TRL could not find the vLLM device: every visible GPU is used for training",
     "lower --num_processes by one (or make one more GPU visible) so vllm_device=auto has a GPU"),
    ("PRB010", re.compile(r"Expected all tensors to be on the same device"),
     "tensors of one operation were on different devices (the error older vLLM releases caused "
     "with TRL's GRPO)", "pip install 'vllm>=0.7.2'; and make each rank see only its own GPU"),
    ("PRB010", re.compile(r"The size of tensor a \((?P<a>\d+)\) must match the size of tensor b "
                          r"\((?P<b>\d+)\)"),
     "a tensor size mismatch in the step (the rotary-embedding error of vLLM < 0.7.2)",
     "pip install 'vllm>=0.7.2'"),
    ("PRB011", re.compile(r"NCCL (error|WARN)|ncclInternalError|ncclSystemError|Watchdog caught "
                          r"collective operation timeout|ProcessGroupNCCL"),
     "a collective (NCCL) failed between the ranks",
     "check NCCL_* variables, that every rank sees its own GPU, and run with NCCL_DEBUG=INFO"),
]


def classify(text: str) -> list[Finding]:
    """Findings for every known failure in ``text`` (a rank's log or error message)."""
    found: list[Finding] = []
    m = _OOM.search(text)
    if m or "CUDA out of memory" in text or "OutOfMemoryError" in text:
        ev = m.groupdict() if m else {}
        where = f" on GPU {ev['gpu']} (total {ev['total']}, {ev['free']} free, tried to allocate " \
                f"{ev['want']})" if m else ""
        found.append(Finding("PRB007", Severity.ERROR, f"CUDA ran out of memory{where}",
                             "free the GPU of other processes, or lower the batch size; set "
                             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation",
                             ev))
    for rule, pattern, message, fix in _SIGNATURES:
        hit = pattern.search(text)
        if hit:
            found.append(Finding(rule, Severity.ERROR, message, fix,
                                 {"matched": hit.group(0)[:200], **hit.groupdict()}))
    missing = re.search(r"No module named '(?P<mod>torch|transformers|trl|datasets|tokenizers|"
                        r"accelerate)'", text)
    if missing:
        found.append(Finding("PRB009", Severity.ERROR,
                             f"the probe needs {missing.group('mod')}, which is not importable by "
                             "the launched interpreter", "pip install 'envdoctor[probe]'",
                             {"module": missing.group("mod")}))
    return found
