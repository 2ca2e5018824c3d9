"""LAY025: an accelerate config that names a DeepSpeed JSON and also sets what that JSON owns.

``accelerate launch`` hands the keys of its config file's ``deepspeed_config`` section (and a
``mixed_precision`` the file gives, where the line passes none) to the processes it starts
(``ACCELERATE_CONFIG_DS_FIELDS``). Where DeepSpeed is configured by a JSON — the file's
``deepspeed_config_file``, ``--deepspeed_config_file`` on the line, or TrainingArguments'
``deepspeed`` (GRPOConfig inherits it) — accelerate's DeepSpeedPlugin refuses any of the fields
the JSON owns with a ValueError when it is built (TrainingArguments or the Accelerator), on every
run (accelerate 0.16.0 onwards). The fields are data (rules/knowledge/accelerate_deepspeed.yaml).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import FileEdit, Remedy
from envdoctor.knowledge import beyond_horizon

#: where the values go instead
JSON_SAYS = (
    "give the values you need in the DeepSpeed JSON instead (zero_optimization.stage, "
    'gradient_accumulation_steps, bf16.enabled …, or "auto" where the training arguments decide)'
)


def _refused(ctx: Context, acc: dict[str, Any], table: dict[str, Any]) -> list[tuple[str, ...]]:
    """The config file's entries accelerate refuses beside a DeepSpeed JSON, as key paths."""
    data = ctx.kb.accelerate_deepspeed
    owned = [str(k) for k in data.get("deepspeed_config_keys") or []]
    found: list[tuple[str, ...]] = [("deepspeed_config", k) for k in table if k in owned]
    trainer = ctx.plan.trainer
    line_sets = trainer is not None and bool(trainer.options.get("mixed_precision"))
    if acc.get("mixed_precision") is not None and not line_sets:
        found.append(("mixed_precision",))
    return found


def _remedy(ctx: Context, path: str, refused: list[tuple[str, ...]]) -> Remedy | None:
    """Those entries taken out of the accelerate config file (one line each), or None where
    one of them is not a one-line entry of a YAML file."""
    if path.endswith(".json"):
        return None
    from envdoctor.parsing import entry_line
    from envdoctor.plan.config_files import text_as_run

    text = text_as_run(ctx.plan, path)
    if not text:
        return None
    lines = text.splitlines()
    at = [entry_line(text, p) for p in refused]
    if any(n is None or n > len(lines) for n in at):
        return None
    edits = tuple(
        FileEdit(path=path, line=n, old=(lines[n - 1],), new=())
        for n in sorted((n for n in at if n is not None), reverse=True)
    )
    keys = ", ".join(".".join(p) for p in refused)
    return Remedy(files=edits, fix=f"remove {keys} from {path}; {JSON_SAYS}")


def _shown(value: Any) -> str:
    return str(value) if isinstance(value, str) else "an inline mapping"


@rule("LAY025", needs=("plan",))
def accelerate_fields_beside_deepspeed_json(ctx: Context) -> Iterator[Hit]:
    trainer = ctx.plan.trainer
    acc = ctx.plan.accelerate
    path = ctx.plan.accelerate_path
    if trainer is None or trainer.launcher != "accelerate" or not acc or not path:
        return
    opts = trainer.options
    if opts.get("cpu") or acc.get("use_cpu") is True:
        return
    if str(acc.get("distributed_type", "")).upper() != "DEEPSPEED" and not opts.get("use_deepspeed"):
        return
    table = acc.get("deepspeed_config")
    table = table if isinstance(table, dict) else {}
    from envdoctor.plan.deepspeed_json import named_json

    named = named_json(ctx.plan)
    if named is None:
        return
    refused = _refused(ctx, acc, table)
    if not refused:
        return
    data = ctx.kb.accelerate_deepspeed
    version = ctx.version("accelerate")
    if version is not None and not versions.at_least(version, str(data.get("since") or "0.16.0")):
        return
    past = beyond_horizon("accelerate", version, ctx.kb)
    said = past.said() if past else (f"accelerate {version}" if version else "accelerate (0.16.0 onwards)")
    keys = ", ".join(f"`{'.'.join(p)}`" for p in refused)
    remedy = _remedy(ctx, str(path), refused)
    yield hit(
        f"{path} sets {keys} and DeepSpeed is configured by a JSON ({named[0]}: {_shown(named[1])}): "
        f"{said} refuses the "
        "accelerate config's DeepSpeed fields beside a DeepSpeed JSON — `accelerate launch` hands "
        'them to the ranks and DeepSpeedPlugin raises ValueError ("When using `deepspeed_config_file`, '
        'the following accelerate config variables will be ignored") when the training arguments '
        "or the trainer's Accelerator build accelerate's DeepSpeedPlugin, at startup, on every run",
        fix=remedy.fix if remedy else f"remove {keys} from {path}; {JSON_SAYS}",
        severity="warning" if past else "error",
        remedy=remedy,
        keys=[".".join(p) for p in refused],
        file=str(path),
    )
