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


def names_model(ctx: Any) -> bool:
    """Whether ``ctx`` names a model, by name or by size (``--model-params``)."""
    return bool(ctx.options.get("model_params")) or model_name(ctx) is not None
