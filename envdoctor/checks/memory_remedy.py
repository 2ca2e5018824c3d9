"""The memory rules' fixes as data (issue 35): each change the memory plan proposes that is a GRPO
config edit becomes a ``Remedy`` (the fix closure proves it before it is printed); one that is
not (ZeRO-3 in the accelerate config, offload, another GPU) stays words only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envdoctor.checks.context import Context
from envdoctor.findings import Remedy
from envdoctor.plan.shell_words import join as shell_join

if TYPE_CHECKING:
    from envdoctor.plan.memory.knobs import Knobs
    from envdoctor.plan.memory.parts import GpuPlan
    from envdoctor.plan.memory.planner import MemoryPlan

#: the fix only the trainer's memory knobs of these names can say as GRPO config keys
_MACHINE = {
    "gradient_checkpointing",
    "batch",
    "grad_accum",
    "steps_per_generation",
    "completion_len",
    "ds3_gather",
}


def _config(ctx: Context, before: Knobs, diff: dict[str, Any]) -> dict[str, Any] | None:
    """The GRPO config keys that make the knob changes ``diff`` (None: one is no config edit)."""
    if not diff or set(diff) - _MACHINE:
        return None
    out: dict[str, Any] = {}
    if "gradient_checkpointing" in diff:
        out["gradient_checkpointing"] = bool(diff["gradient_checkpointing"])
    if "batch" in diff:
        out["per_device_train_batch_size"] = int(diff["batch"])
    if "grad_accum" in diff:
        out["gradient_accumulation_steps"] = int(diff["grad_accum"])
    if "steps_per_generation" in diff and ctx.config.get("steps_per_generation") is not None:
        out["steps_per_generation"] = int(diff["steps_per_generation"])
    if "completion_len" in diff:
        out["max_completion_length"] = int(diff["completion_len"])
    if "ds3_gather" in diff:
        out["ds3_gather_for_generation"] = bool(diff["ds3_gather"])
    return out


def trainer_remedies(ctx: Context, plan: MemoryPlan, row: GpuPlan) -> list[Remedy]:
    """The plan's fixes for a training GPU that are GRPO config edits: each single change, then
    the smallest set that fits together (the closure keeps those that hold)."""
    from envdoctor.plan.memory.planner import _candidates, _diff, smallest_fix_set

    k = plan.knobs
    out: list[Remedy] = []
    texts: dict[str, dict[str, Any]] = {}
    for text, changed in _candidates(plan.model, k, row):
        diff = _diff(k, changed)
        texts[text] = diff
        edit = _config(ctx, k, diff)
        if edit:
            out.append(
                Remedy(config_set=edit, fix="set " + ", ".join(f"{a}: {_yaml(v)}" for a, v in edit.items()))
            )
    found = smallest_fix_set(plan.model, k, row)
    if found is not None and len(found[0]) > 1:
        merged: dict[str, Any] = {}
        for text in found[0]:
            merged.update(texts.get(text, {"?": None}))
        edit = _config(ctx, k, merged)
        if edit:
            out.append(
                Remedy(config_set=edit, fix="set " + ", ".join(f"{a}: {_yaml(v)}" for a, v in edit.items()))
            )
    return out


def _yaml(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def vllm_length_remedy(ctx: Context, key: str, value: int) -> Remedy | None:
    """vLLM's max_model_len set to ``value``: the GRPO config key in colocate mode, the server's
    ``--max_model_len`` on its launch line in server mode."""
    return _vllm_remedy(ctx, key, value)


def _vllm_remedy(ctx: Context, key: str, value: Any) -> Remedy | None:
    if not key.startswith("--"):
        return Remedy(config_set={key: value}, fix=f"set {key}: {_yaml(value)}")
    server = ctx.plan.server
    if server is None:
        return None
    from envdoctor.checks.layout import launch_remedy

    line = _flag_set(server.raw, key[2:], value)
    return launch_remedy(ctx, line, server=True)


def _flag_set(line: str, flag: str, value: Any) -> str:
    """``line`` with ``--flag`` (either spelling, ``--flag=v`` too) set to ``value``, or added."""
    import shlex

    argv = shlex.split(line)
    names = {f"--{flag}", f"--{flag.replace('_', '-')}"}
    for i, tok in enumerate(argv):
        name = tok.split("=", 1)[0]
        if name in names:
            if "=" in tok:
                argv[i] = f"{name}={value}"
            elif i + 1 < len(argv):
                argv[i + 1] = str(value)
            return shell_join(argv)
    dashed = any(t.startswith("--") and "-" in t[2:] for t in argv)
    return shell_join([*argv, f"--{flag.replace('_', '-') if dashed else flag}", str(value)])


def vllm_util_remedy(ctx: Context, key: str, value: float) -> Remedy | None:
    """vLLM's gpu_memory_utilization set to ``value`` (config key or server flag)."""
    return _vllm_remedy(ctx, key, round(value, 2))


def colocate_length_key(ctx: Context) -> str | None:
    """The GRPO config key that sets the colocated vLLM's max_model_len in this TRL (None: the
    release has none; TRL 0.18-0.25 derive it from the prompt and completion lengths)."""
    for key in ("vllm_max_model_length", "vllm_max_model_len"):
        if key in ctx.config:
            return key
    for key in ("vllm_max_model_length", "vllm_max_model_len"):
        if ctx.kb.has_config_key(key, ctx.trl.version) is True:
            return key
    return None
