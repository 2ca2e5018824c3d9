"""Differences between nodes that break (or slow) training: the cluster check and ``envdoctor diff``.

Plain data in, ``Finding`` out; no torch. The reference value of each difference is the one most
nodes have (ties: the first node's), so the fix names the nodes to change. A fix moves nodes
toward a working training node, never away from one: a package of the training stack missing on
some nodes is installed there (its reference is the most common installed version, never "not
installed"), and a torch CUDA build is never replaced by a CPU one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from envdoctor.facts.environment import is_secret
from envdoctor.facts.interface import Facts
from envdoctor.findings import Finding, Severity

MISSING = "not installed"
UNSET = "unset"
# The training stack: a version difference here is an error (CLU001).
STACK = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "transformers",
        "trl",
        "vllm",
        "accelerate",
        "deepspeed",
        "peft",
        "datasets",
        "tokenizers",
        "safetensors",
        "flash-attn",
        "flashinfer-python",
        "triton",
        "xformers",
        "bitsandbytes",
        "liger-kernel",
        "numpy",
    }
)
NOT_STACK = frozenset({"nvidia-ml-py"})
# Variables that change how collectives, memory or precision behave (CLU004).
ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "GLOO_", "FI_", "UCX_")
ENV_EXACT = frozenset(
    {
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "CUDA_DEVICE_ORDER",
        "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_ALLOC_CONF",
        "ACCELERATE_MIXED_PRECISION",
        "ACCELERATE_USE_DEEPSPEED",
        "ACCELERATE_USE_FSDP",
        "ACCELERATE_DYNAMO_BACKEND",
        "TORCH_DISTRIBUTED_BACKEND",
    }
)
# Logging and debugging switches: differences are harmless.
ENV_IGNORED = frozenset(
    {
        "NCCL_DEBUG",
        "NCCL_DEBUG_SUBSYS",
        "NCCL_DEBUG_FILE",
        "TORCH_NCCL_DUMP_ON_TIMEOUT",
        "TORCH_NCCL_TRACE_BUFFER_SIZE",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
        "TORCH_NCCL_DESYNC_DEBUG",
    }
)
OTHERS_SHOWN = 8


@dataclass
class NodeView:
    """One node (or one snapshot) to compare: a label such as ``node 1 (gpu-b)``, its facts and
    the torch runtime (``torch_cuda``, ``nccl``) when it was read live."""

    label: str
    facts: Facts
    runtime: dict[str, str] = field(default_factory=dict)


def env_relevant(name: str) -> bool:
    return (
        (name.startswith(ENV_PREFIXES) or name in ENV_EXACT)
        and name not in ENV_IGNORED
        and not is_secret(name)
    )


def is_stack(name: str) -> bool:
    return name in STACK or (name.startswith("nvidia-") and name not in NOT_STACK)


def _driver_value(node: NodeView, key: str) -> str | None:
    return getattr(node.facts.driver, key) or None


def _env_value(node: NodeView, key: str) -> str:
    return node.facts.env.get(key, UNSET)


def _spread(nodes: list[NodeView], value: Callable[[NodeView], str | None]) -> dict[str, list[str]]:
    """value -> the labels of the nodes that have it (nodes where it is None are left out)."""
    out: dict[str, list[str]] = {}
    for node in nodes:
        v = value(node)
        if v is not None:
            out.setdefault(v, []).append(node.label)
    return out


def _reference(spread: dict[str, list[str]], pinned: str | None = None) -> str:
    """The reference node's value where one is named (``pinned``, a node's label) and has one;
    else the value most nodes have, ties to the first node's (dicts keep insertion order)."""
    for value, labels in spread.items():
        if pinned is not None and pinned in labels:
            return value
    return max(spread, key=lambda v: len(spread[v]))


def _describe(spread: dict[str, list[str]]) -> str:
    return "; ".join(f"{v} on {', '.join(labels)}" for v, labels in spread.items())


def _others(spread: dict[str, list[str]], ref: str) -> list[str]:
    return [label for v, labels in spread.items() if v != ref for label in labels]


def _finding(
    rule: str, severity: Severity, what: str, spread: dict[str, list[str]], fix: str, **evidence
) -> Finding:
    return Finding(
        rule,
        severity,
        f"{what} differs across nodes: {_describe(spread)}",
        fix=fix,
        evidence={"values": {label: v for v, labels in spread.items() for label in labels}, **evidence},
    )


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def torch_cuda(node: NodeView) -> str | None:
    """torch's CUDA runtime: read live, else from the wheel's local version (``+cu124``)."""
    if node.runtime.get("torch_cuda"):
        return node.runtime["torch_cuda"]
    version = node.facts.version("torch")
    if version is None:
        return None
    local = version.split("+", 1)[1] if "+" in version else ""
    m = re.fullmatch(r"cu(\d+)(\d)", local)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    return local or "unknown (no +local version)"


def packages(nodes: list[NodeView], pinned: str | None = None) -> list[Finding]:
    """CLU001: stack packages (and Python) with different versions; the rest as one info."""
    names = sorted({n for node in nodes for n in node.facts.packages})
    out, others = [], []

    def version_of(name: str) -> Callable[[NodeView], str]:
        def get(node: NodeView) -> str:
            v = node.facts.version(name)
            return MISSING if v is None else (_public(v) if name == "torch" else v)

        return get

    py = _spread(nodes, lambda n: ".".join(n.facts.python.split(".")[:2]) or None)
    if len(py) > 1:
        ref = _reference(py, pinned)
        out.append(
            _finding(
                "CLU001",
                Severity.ERROR,
                "Python",
                py,
                f"use Python {ref} on {', '.join(_others(py, ref))}: pickled objects, "
                "compiled extensions and wheels differ between Python versions",
                package="python",
            )
        )
    for name in names:
        spread = _spread(nodes, version_of(name))
        if len(spread) < 2:
            continue
        if not is_stack(name):
            others.append((name, spread))
            continue
        ref = _reference({v: ls for v, ls in spread.items() if v != MISSING}, pinned)
        where = ", ".join(_others(spread, ref))
        fix = f"pip install '{name}=={ref}' on {where}"  # never uninstall the training stack
        out.append(
            _finding(
                "CLU001",
                Severity.ERROR,
                name,
                spread,
                f"install the same version on every node: {fix}",
                package=name,
            )
        )
    if others:
        shown = "; ".join(f"{n}: {_describe(s)}" for n, s in others[:OTHERS_SHOWN])
        more = f" (and {len(others) - OTHERS_SHOWN} more)" if len(others) > OTHERS_SHOWN else ""
        out.append(
            Finding(
                "CLU001",
                Severity.INFO,
                f"{len(others)} package{'s' * (len(others) != 1)} outside the training stack "
                f"differ: {shown}{more}",
                fix="usually harmless; install from one lock file (pip freeze / uv pip sync) on every "
                "node to rule them out",
                evidence={
                    "packages": {n: {label: v for v, ls in s.items() for label in ls} for n, s in others}
                },
            )
        )
    return out


def cuda(nodes: list[NodeView], pinned: str | None = None) -> list[Finding]:
    """CLU002: torch's CUDA runtime and NCCL (errors), the driver (warnings)."""
    out = []
    rt = _spread(nodes, torch_cuda)
    if len(rt) > 1:
        built = {v: ls for v, ls in rt.items() if re.fullmatch(r"\d+\.\d+", v)}
        ref = _reference(built or rt, pinned)  # a CUDA build, never a CPU one, is what nodes move to
        tag = "cu" + ref.replace(".", "") if re.fullmatch(r"\d+\.\d", ref) else ref
        out.append(
            _finding(
                "CLU002",
                Severity.ERROR,
                "torch's CUDA runtime",
                rt,
                f"install the same torch build (+{tag}) on {', '.join(_others(rt, ref))}: "
                f"pip install torch --index-url https://download.pytorch.org/whl/{tag}",
                component="torch_cuda",
            )
        )
    nccl = _spread(nodes, lambda n: n.runtime.get("nccl") or None)
    if len(nccl) > 1:
        ref = _reference(nccl, pinned)
        out.append(
            _finding(
                "CLU002",
                Severity.ERROR,
                "NCCL (torch.cuda.nccl.version())",
                nccl,
                f"use the NCCL {ref} build on {', '.join(_others(nccl, ref))}: every rank of a "
                "communicator must run the same NCCL version (same torch wheel, same "
                "nvidia-nccl-cu* package, no LD_PRELOAD / LD_LIBRARY_PATH override)",
                component="nccl",
            )
        )
    for key, what in (("cuda", "The driver's CUDA version"), ("version", "The NVIDIA driver")):
        spread = _spread(nodes, partial(_driver_value, key=key))
        if len(spread) > 1:
            ref = _reference(spread, pinned)
            out.append(
                _finding(
                    "CLU002",
                    Severity.WARNING,
                    what,
                    spread,
                    f"install driver {ref if key == 'version' else 'with CUDA ' + ref} on "
                    f"{', '.join(_others(spread, ref))} (or at least one that supports every node's "
                    "torch CUDA runtime)",
                    component=f"driver.{key}",
                )
            )
    return out


def gpu_summary(node: NodeView) -> str | None:
    """``2 × NVIDIA H100 80GB HBM3 (cc 9.0)``, or ``no GPU (why)``."""
    f = node.facts
    if not f.gpus:
        return "no GPU" + (f" ({f.nvml_error})" if f.nvml_error else "")
    counts: dict[str, int] = {}
    for g in f.gpus:
        name = g.name + (f" (cc {g.compute_capability})" if g.compute_capability else "")
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n} × {name}" for name, n in sorted(counts.items()))


def gpus(nodes: list[NodeView]) -> list[Finding]:
    """CLU003: GPU models (and compute capabilities) differ; counts alone are not a finding."""
    if not any(n.facts.gpus for n in nodes):
        return []

    def kinds(node: NodeView) -> str | None:
        f = node.facts
        if not f.gpus:
            return gpu_summary(node)
        return ", ".join(
            sorted(
                {g.name + (f" (cc {g.compute_capability})" if g.compute_capability else "") for g in f.gpus}
            )
        )

    spread = _spread(nodes, kinds)
    if len(spread) < 2:
        return []
    detail = _spread(nodes, gpu_summary)
    return [
        _finding(
            "CLU003",
            Severity.WARNING,
            "The GPU model",
            detail,
            "run the job on nodes of one GPU model, or size batch, memory utilization and precision "
            "for the smallest and slowest GPU (bf16 needs compute capability 8.0 or newer)",
        )
    ]


def env_vars(nodes: list[NodeView], pinned: str | None = None) -> list[Finding]:
    """CLU004: NCCL / collective / allocator variables set differently."""
    keys = sorted({k for n in nodes for k in n.facts.env if env_relevant(k)})
    out = []
    for key in keys:
        spread = _spread(nodes, partial(_env_value, key=key))
        if len(spread) < 2:
            continue
        ref = _reference(spread, pinned)
        change = f"unset {key}" if ref == UNSET else f"export {key}={ref}"
        out.append(
            _finding(
                "CLU004",
                Severity.WARNING,
                key,
                spread,
                f"set it the same on every node: {change} on "
                f"{', '.join(_others(spread, ref))} (or in the launch script all "
                "nodes share)",
                variable=key,
            )
        )
    return out


def compare(nodes: list[NodeView], reference: NodeView | None = None) -> list[Finding]:
    """Every difference between the nodes (CLU001–CLU004); none for fewer than two nodes. The
    fixes move the other nodes to ``reference``'s values, or to the majority's when it is None."""
    if len(nodes) < 2:
        return []
    pin = reference.label if reference is not None else None
    return [*packages(nodes, pin), *cuda(nodes, pin), *gpus(nodes), *env_vars(nodes, pin)]
