"""Read GRPO and accelerate config files (YAML or JSON) safely, errors naming the file.

The bounded readers live in ``envdoctor.parsing`` (below facts, which reads files too); they
are importable from here as before.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from envdoctor.parsing import (  # noqa: F401  (re-exported)
    ACCELERATE_KEYS,
    GRPO_KEYS,
    MAX_ALIAS_NODES,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    check_structure,
    mentions_config_keys,
    parse_mapping,
    read_mapping,
)

if TYPE_CHECKING:
    from envdoctor.plan.interface import Plan


def text_as_run(plan: Plan, path: str) -> str | None:
    """A config file's text as the run reads it: ``envdoctor fix``'s edit in memory first, else
    the file (bounded); None where it cannot be read."""
    from envdoctor.errors import InputError, read_input_text

    edited = plan.edited.get(os.path.normpath(path))
    if edited is not None:
        return edited
    try:
        return read_input_text(path, "config", MAX_BYTES)
    except InputError:
        return None


def _run_record(data: dict[str, Any]) -> bool:
    if "wandb_version" in data or "_wandb" in data:
        return True
    values = [v for k, v in data.items() if not str(k).startswith("_")]
    return len(values) >= 3 and all(isinstance(v, dict) and "value" in v and len(v) <= 2 for v in values)


def kind_of(data: dict[str, Any]) -> str:
    """``"accelerate"``, ``"grpo"`` or ``"unknown"``, by the keys a config holds; a record of a
    run (``"run-record"``) is no config: Weights & Biases' ``wandb/run-*/files/config.yaml`` holds
    each key as ``{value: …, desc: …}`` (and ``wandb_version`` / ``_wandb``)."""
    keys = set(data)
    if _run_record(data):
        return "run-record"
    acc, grpo = len(keys & ACCELERATE_KEYS), len(keys & GRPO_KEYS)
    if "compute_environment" in keys or "distributed_type" in keys or acc > grpo:
        return "accelerate"
    if grpo:
        return "grpo"
    return "unknown"
