"""The GRPO settings a fix names (spelled as the installed TRL spells them, with this run's value), and
the fix texts several causes share."""

from __future__ import annotations

from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.units import size_text


def vgpu_cap_fix(used_bytes: float, then: str) -> str:
    """The fix for an allocation refused by HAMi's vGPU cap: the limit, or a step that fits
    (``then`` says how)."""
    return (
        f"raise the pod's GPU memory limit (nvidia.com/gpumem of HAMi) above "
        f"{size_text(used_bytes)}, or make the step fit the cap: {then}"
    )


#: the fix for ranks of one job that share a GPU (every rank on cuda:0, contexts on GPU 0)
RANK_DEVICE = (
    "give every rank its own GPU: call torch.cuda.set_device(int(os.environ["
    "'LOCAL_RANK'])) before anything touches CUDA, load with "
    "device_map={'': local_rank} (not cuda:0 / 'auto'), and no torch.cuda calls, "
    ".to('cuda') or cuda:0 before the launcher's device is set"
)


def _known(ctx: Context, name: str) -> bool | None:
    return ctx.kb.has_config_key(name, ctx.version("trl"))


def offered(ctx: Context | None, name: str) -> bool:
    """Whether a fix may name setting ``name``: not when the installed TRL lacks it."""
    return ctx is None or _known(ctx, name) is not False


def pick(ctx: Context | None, *names: str) -> str:
    """The first of ``names`` that the installed TRL accepts (else the first)."""
    if ctx is not None:
        for name in names:
            if _known(ctx, name):
                return name
    return names[0]


def value(ctx: Context | None, name: str) -> tuple[Any, str]:
    """``(value, where it comes from)`` of a setting: the config, else TRL's default."""
    if ctx is None:
        return None, ""
    if name in ctx.config:
        return ctx.config[name], "in the config"
    entry = ctx.kb.config_key(name) or {}
    trl = ctx.version("trl")
    default = entry.get("default")
    for step in entry.get("default_history") or []:
        if trl and not versions.below(trl, str(step.get("since"))):
            default = step.get("default")
    if default is None or not trl or "default" not in entry:
        return None, ""
    return default, f"default in TRL {trl}"


def setting(ctx: Context | None, *names: str) -> str:
    """``name (value, where)``, e.g. ``vllm_gpu_memory_utilization (0.9 in the config)``."""
    name = pick(ctx, *names)
    val, where = value(ctx, name)
    if val is None:
        return name
    return f"{name} ({val} in the config)" if where == "in the config" else f"{name} ({where}: {val})"
