"""Map ``CUDA_VISIBLE_DEVICES`` to physical GPUs (NVML indices), as the CUDA runtime does.

CUDA reads the list up to the first entry it cannot use (the rest is ignored), a repeated entry
makes no GPU visible, ``-1`` or an empty value hides all, and ``GPU-``/``MIG-`` entries match UUIDs
by unique prefix. Ordinals count in CUDA's order: fastest first unless
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (NVML's order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from envdoctor.facts.interface import Gpu

_ORDINAL = re.compile(r"^\s*(-?\d+)")


@dataclass
class Visible:
    """The outcome: physical GPUs in CUDA order, and what was dropped and why."""

    gpus: list[int] = field(default_factory=list)
    mig: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # entries after the first bad one
    bad: str | None = None  # the first entry CUDA could not use
    problem: str | None = None  # a sentence for the report


def cuda_order(gpus: list[Gpu], device_order: str | None) -> list[Gpu]:
    """GPUs in the order CUDA numbers them.

    ``FASTEST_FIRST`` (CUDA's default) ranks by compute capability, then memory, ties in PCI
    order; on identical GPUs it equals NVML's PCI order.
    """
    ordered = sorted(gpus, key=lambda g: g.index)
    if (device_order or "").upper() == "PCI_BUS_ID":
        return ordered

    def speed(g: Gpu) -> tuple[int, ...]:
        try:
            cc = tuple(int(x) for x in str(g.compute_capability).split("."))
        except ValueError:
            cc = (0, 0)
        return (-cc[0], -cc[1] if len(cc) > 1 else 0, -(g.memory_total_mib or 0), g.index)

    return sorted(ordered, key=speed)


def resolve_visible(value: str | None, gpus: list[Gpu], device_order: str | None = None) -> Visible:
    """Physical GPUs a process sees for a ``CUDA_VISIBLE_DEVICES`` value (None: unset)."""
    order = cuda_order(gpus, device_order)
    if value is None:
        return Visible(gpus=[g.index for g in order])
    text = value.strip()
    if text == "":
        return Visible(problem="CUDA_VISIBLE_DEVICES is empty: no GPU is visible")
    entries = [e.strip() for e in text.split(",")]
    out = Visible()
    for pos, entry in enumerate(entries):
        target = _match(entry, order, out)
        if target is None:
            out.bad = entry
            out.ignored = entries[pos + 1 :]
            break
        if target in out.gpus:
            out.gpus, out.mig = [], []
            out.problem = (
                f"CUDA_VISIBLE_DEVICES={value} names GPU {entry} twice: CUDA then makes no GPU visible"
            )
            return out
        out.gpus.append(target)
    if out.bad is not None:
        if out.bad.startswith("-"):
            why = f"'{out.bad}' hides every GPU from that entry on"
        else:
            why = f"'{out.bad}' is not a GPU of this machine ({len(gpus)} found)"
        dropped = f"; ignored after it: {','.join(out.ignored)}" if out.ignored else ""
        out.problem = f"CUDA_VISIBLE_DEVICES={value}: {why}{dropped}"
    return out


def _match(entry: str, order: list[Gpu], out: Visible) -> int | None:
    """The NVML index an entry names, or None when CUDA would stop there."""
    if entry.startswith("GPU-"):
        hits = [g for g in order if g.uuid.startswith(entry)]
        return hits[0].index if len(hits) == 1 else None
    if entry.startswith("MIG-"):
        for g in order:
            if any(m.startswith(entry) for m in g.mig_devices):
                out.mig.append(entry)
                return g.index
        return None
    m = _ORDINAL.match(entry)
    if not m:
        return None
    ordinal = int(m.group(1))
    if ordinal < 0 or ordinal >= len(order):
        return None
    return order[ordinal].index
