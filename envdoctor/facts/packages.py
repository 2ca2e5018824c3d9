"""Installed distributions of the training stack, read from their metadata (no imports)."""

from __future__ import annotations

import importlib.metadata as md
import re

from envdoctor.facts.interface import Package, normalize_name

#: The training stack whose versions and requirements envdoctor reads.
STACK = (
    "torch", "torchvision", "transformers", "trl", "vllm", "accelerate", "deepspeed", "peft",
    "datasets", "flash-attn", "bitsandbytes", "liger-kernel", "xformers", "triton",
    "nvidia-ml-py", "pynvml", "huggingface-hub", "tokenizers", "safetensors",
)

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def requirement_name(line: str) -> str | None:
    """The (normalized) distribution name a ``Requires-Dist`` line is about."""
    m = _NAME.match(line)
    return normalize_name(m.group(1)) if m else None


def _read(name: str) -> Package | None:
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        return None
    except Exception as exc:  # corrupt metadata: a fact, not a crash
        return Package(version=f"<unreadable: {type(exc).__name__}>", requires=None)
    try:
        version = dist.version
        requires = list(dist.requires or [])
    except Exception as exc:
        return Package(version=f"<unreadable: {type(exc).__name__}>", requires=None)
    if not isinstance(version, str) or not version:
        version = "<unreadable: no Version field>"
    return Package(version=version, requires=requires)


def collect_packages(names: tuple[str, ...] = STACK) -> dict[str, Package]:
    """The stack's distributions plus the distributions they directly require."""
    found: dict[str, Package] = {}
    for name in names:
        pkg = _read(name)
        if pkg is not None:
            found[normalize_name(name)] = pkg
    wanted = {
        req
        for pkg in list(found.values())
        for line in pkg.requires or []
        if (req := requirement_name(line)) and req not in found
    }
    for name in sorted(wanted):
        pkg = _read(name)
        if pkg is not None:
            found[name] = Package(version=pkg.version, requires=None)
    return found
