"""What the model's config.json makes the run need of transformers and vLLM (the floors PKG010
judges and the package resolver keeps): one place both read, below either."""

from __future__ import annotations

from typing import Any

from envdoctor.checks.context import Context


def model_names(ctx: Context) -> list[tuple[str, str, str, Any]]:
    """What the model's config.json makes the run need (rules/knowledge/models.json.gz): each
    (package, name, kind, Support) for its model type (transformers) and, when the run uses vLLM,
    its architecture, where a release read has the name; none for a model with code of its own
    (auto_map) or whose config.json is not here. config.json is read once per context."""
    from envdoctor.knowledge.models import lookup
    from envdoctor.plan.memory.planner import _resolved

    shape, _ = _resolved(ctx)
    if shape is None or shape.remote_code or not (shape.model_type or shape.architectures):
        return []
    asks: list[tuple[str, str, str]] = []
    if shape.model_type:
        asks.append(("transformers", shape.model_type, "model type"))
    if ctx.plan.use_vllm:
        asks += [("vllm", a, "architecture") for a in shape.architectures[:1]]
    out = []
    for dist, name, kind in asks:
        found = lookup(dist, name)
        if found is not None and found.known and found.first is not None:
            out.append((dist, name, kind, found))  # else a custom model, or past the horizon
    return out
