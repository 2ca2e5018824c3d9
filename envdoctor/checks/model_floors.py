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


def _type_from_name(name: str) -> tuple[str, Any] | None:
    """A transformers model type a hub name states (``Qwen/Qwen3.5-9B`` → qwen3_5,
    ``google/gemma-3-1b-it`` → gemma3), with its support; None where no model type of the table
    is the name's words before its size, all of them (``microsoft/phi-4``: none; its type is
    phi3): a name envdoctor does not place says nothing (its needs are not known), nor does a
    local folder's (``./outputs/qwen3``: a fine-tune of anything)."""
    import re

    from envdoctor.knowledge.models import lookup

    if _local_path(name):
        return None  # a folder's name is the user's words, not the model's: its type is not known
    tail = name.rstrip("/").rsplit("/", 1)[-1].lower()
    words: list[str] = []
    for word in re.split(r"[-_\s]+", tail):
        if not word or re.fullmatch(r"\d+(?:\.\d+)?[bmk]|a\d+b|\d+x\d+[bm]", word) and words:
            break  # the size (9b, 0.5b, a3b): the family's words end there
        words.append(word)
    # every word of the family, never fewer: phi-4 is no `phi` model (it is phi3), Llama-3.2's
    # needs are not llama's first release's; a size of active parameters (Qwen3-30B-A3B,
    # Qwen2-57B-A14B) names the family's MoE type first (qwen3_moe, qwen2_moe: 4.40, not 4.37)
    moe = any(re.fullmatch(r"a\d+(?:\.\d+)?b", w) for w in re.split(r"[-_\s]+", tail))
    joins = [
        "_".join(words).replace(".", "_"),
        "".join(words).replace(".", "_"),
        "".join(words).replace(".", ""),
    ]
    for joined in dict.fromkeys([*(f"{j}_moe" for j in joins if moe), *joins] if words else []):
        found = lookup("transformers", joined)
        if found is not None and found.known and found.first is not None:
            return joined, found
    return None


def _local_path(name: str) -> bool:
    """``./outputs/qwen3``, ``/data/ckpt/llama``, ``~/models/x``, ``runs/exp1/checkpoint-500``:
    a folder, not a hub id (``owner/name``, or a legacy bare ``gpt2``)."""
    import os

    return (
        name.startswith(("/", ".", "~", "$"))
        or "\\" in name
        or name.rstrip("/").count("/") > 1
        or os.path.isdir(name)
    )


def transformers_floor(ctx: Context, installed: str | None) -> tuple[str, str] | None:
    """The floor a plan must keep transformers at when the model's config.json was not read
    (``model_names`` gives the floor from it otherwise): the first release of the model type its
    name states; where the run names no model, or one whose type envdoctor cannot place, the
    installed release itself, since which releases load that model is not known (set 18's
    Qwen3.5 run: a downgrade below 5.2 cannot load it). (spec, why), or None where a config.json
    was read or nothing is installed."""
    from envdoctor.plan.memory.planner import _resolved
    from envdoctor.plan.model_name import model_name

    if not installed or ctx.options.get("model_params"):
        return None
    shape, _ = _resolved(ctx)
    if shape is not None:
        return None  # model_names: the config.json's own floor
    name = model_name(ctx)
    placed = _type_from_name(name) if name else None
    if placed is not None:
        kind, found = placed
        return f">={found.first}", f"{name} is a {kind} model (first in transformers {found.first})"
    who = f"{name}'s config.json was not read" if name else "the run's model is not named"
    return (
        f">={installed}",
        f"{who}: which transformers releases load it is not known, so none below the installed one",
    )
