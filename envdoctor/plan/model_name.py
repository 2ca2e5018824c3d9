"""Which model a run names: light, so that a check without one never loads the memory plan."""

from __future__ import annotations

from typing import Any

#: Why the memory rules are skipped when the run names no model.
NO_MODEL = (
    "no model: the config has no model_name_or_path (envdoctor plan-memory "
    "--model PATH_OR_ID or --model-params 7B)"
)


def model_name(ctx: Any) -> str | None:
    """``--model``, else the config's ``model_name_or_path``, else the vLLM server's ``--model``."""
    name = ctx.options.get("model") or ctx.config.get("model_name_or_path")
    server = ctx.plan.server
    if not name and server is not None:
        name = server.options.get("model")
    return str(name) if isinstance(name, (str, int)) and str(name).strip() else None


def size_in_name(name: str) -> str | None:
    """The parameter count a model's name states (``Qwen2.5-1.5B-Instruct`` → ``1.5B``,
    ``SmolLM2-360M`` → ``360M``; a mixture's ``8x7B`` and active ``A3B`` counts say nothing
    of the total), or None."""
    import re

    tail = name.rstrip("/").rsplit("/", 1)[-1]
    found = [
        m.group(1) + m.group(2).upper()
        for m in re.finditer(r"(?<![\w.x])(\d+(?:\.\d+)?)([BbMm])(?![A-Za-z0-9])", tail)
        if not m.string[max(m.start() - 1, 0) : m.start()].upper().endswith("A")
    ]
    return found[-1] if len(found) == 1 else None


def model_params_hint(name: str | None) -> str:
    """``--model-params`` as a fix names it: the size the model's name states, else N."""
    size = size_in_name(name) if name else None
    return f"--model-params {size}" if size else "--model-params N (the model's parameter count, e.g. 7B)"


def names_model(ctx: Any) -> bool:
    """Whether ``ctx`` names a model, by name or by size (``--model-params``)."""
    return bool(ctx.options.get("model_params")) or model_name(ctx) is not None
