"""Read GRPO and accelerate config files (YAML or JSON) safely, errors naming the file.

The bounded readers live in ``envdoctor.parsing`` (below facts, which reads files too); they
are importable from here as before.
"""

from __future__ import annotations

from typing import Any

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


def kind_of(data: dict[str, Any]) -> str:
    """``"accelerate"``, ``"grpo"`` or ``"unknown"``, by the keys a config holds."""
    keys = set(data)
    acc, grpo = len(keys & ACCELERATE_KEYS), len(keys & GRPO_KEYS)
    if "compute_environment" in keys or "distributed_type" in keys or acc > grpo:
        return "accelerate"
    if grpo:
        return "grpo"
    return "unknown"
