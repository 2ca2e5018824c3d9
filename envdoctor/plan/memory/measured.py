"""How far the memory plan has been measured on real GPUs, as data: beyond it the same formulas
are extrapolated, and plan-memory and docs/memory.md say so. Move these numbers when a larger
run is measured (the record of the runs: ``RECORD``)."""

from __future__ import annotations

#: the largest model measured: Qwen2.5-7B on an H200 (full fine-tune bf16 and fp32, LoRA)
MEASURED_PARAMS = 7.6e9
#: the largest model measured under ZeRO-3 (sharded weights): Qwen2.5-7B on two H200s
MEASURED_SHARDED_PARAMS = 7.6e9
#: where the measurements are recorded
RECORD = "docs/validation/memory-gpu-h200x2-k.md"


def measured_note(params: float, sharded: bool) -> str:
    """One line: whether a plan for ``params`` parameters lies in the measured range."""
    limit = MEASURED_SHARDED_PARAMS if sharded else MEASURED_PARAMS
    what = "under ZeRO-3 / FSDP sharding" if sharded else "(full fine-tune bf16 and fp32, LoRA)"
    scope = f"measured on GPUs up to {limit / 1e9:.1f}B parameters {what}; {RECORD}"
    if params > limit:
        return f"extrapolated: {params / 1e9:.2f}B parameters is beyond the range {scope}"
    return f"within the range {scope}"
