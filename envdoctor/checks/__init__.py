"""Rule functions, one module per area; importing a module registers its rules. A check imports
only the modules with a rule that can run (``registry.entry_of``); ``import_all`` loads them all."""

from __future__ import annotations

#: the rule modules, in the order their rules were listed
MODULES = (
    "packages",
    "optional_features",
    "resume_torch_load",
    "import_shadow",
    "config",
    "config_values",
    "config_words",
    "trl_overrides",
    "peft_checkpointing",
    "deepspeed_ref",
    "gpus",
    "layout",
    "layout_launchers",
    "launcher_deepspeed",
    "merge_conflict",
    "layout_server",
    "layout_unused",
    "engine_start",
    "memory",
    "memory_plan",
    "allocator",
    "declared",
    "declared_newest",
    "data",
    "scope",
    "known_failures",
    "secrets",
    "repository",
    "repo_models",
)


def import_all() -> None:
    """Import every rule module (registering every rule)."""
    import importlib

    for name in MODULES:
        importlib.import_module(f"envdoctor.checks.{name}")
