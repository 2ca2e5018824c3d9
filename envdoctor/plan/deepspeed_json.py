"""The DeepSpeed JSON config a run names, read for what decides how DeepSpeed builds a model.

A run names one in its GRPO config or command line (``deepspeed: zero2.json``, TrainingArguments'
``--deepspeed``; a mapping there is the config itself) or in its accelerate config
(``deepspeed_config.deepspeed_config_file``, or ``--deepspeed_config_file`` on the launch line).
Relative paths are the launch's working folder's (the folder ``check`` and the hook run in).
Bounded: a file over ``MAX_BYTES``, not JSON, or not a mapping is said, never raised.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from envdoctor.plan.interface import Plan

MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class DeepSpeedJson:
    """What a DeepSpeed config holds: ``stage`` (zero_optimization.stage, None when absent or not a
    number), ``optimizer`` (its optimizer section's type, None when it has none), ``bf16`` /
    ``fp16`` (their ``enabled``: True, False, "auto", or None when absent); ``where`` names it
    as the run does; ``problem`` says why it was not read."""

    where: str
    path: str | None = None
    stage: int | None = None
    optimizer: str | None = None
    bf16: bool | str | None = None
    fp16: bool | str | None = None
    problem: str | None = None


def named_json(plan: Plan) -> tuple[str, Any] | None:
    """How the run names its DeepSpeed JSON and the path or inline mapping, the GRPO config's
    first (TrainingArguments' deepspeed), then the launch line's, then the accelerate config's."""
    value = plan.config.get("deepspeed")
    if isinstance(value, (str, dict)) and value:
        origin = plan.config_origin.get("deepspeed") or "the GRPO config"
        return f"deepspeed ({origin})", value
    trainer = plan.trainer
    opt = trainer.options.get("deepspeed_config_file") if trainer is not None else None
    if isinstance(opt, str) and opt:
        return "--deepspeed_config_file (launch line)", opt
    table = plan.accelerate.get("deepspeed_config")
    if isinstance(table, dict) and isinstance(table.get("deepspeed_config_file"), str):
        where = f"deepspeed_config_file (accelerate config {plan.accelerate_path or ''})".replace(" )", ")")
        return where, table["deepspeed_config_file"]
    return None


def _enabled(section: Any) -> bool | str | None:
    if not isinstance(section, dict):
        return None
    value = section.get("enabled")
    if isinstance(value, bool) or value is None:
        return value
    text = str(value).strip().lower()
    return "auto" if text == "auto" else text in ("true", "1", "yes")


def read_deepspeed_json(plan: Plan) -> DeepSpeedJson | None:
    """The DeepSpeed config the plan names, read; None when it names none."""
    named = named_json(plan)
    if named is None:
        return None
    where, value = named
    path = None
    if isinstance(value, str):
        path = os.path.expandvars(os.path.expanduser(value))
        if "$" in path:
            return DeepSpeedJson(where, value, problem=f"{value} is left to the shell")
        if not os.path.lexists(path):  # where the run would find it (plan.launch_files.locate)
            from envdoctor.plan.launch_files import locate

            path = locate(path)[0] or path
        try:
            if os.path.getsize(path) > MAX_BYTES:
                return DeepSpeedJson(where, value, problem=f"{value} is over {MAX_BYTES >> 20} MiB")
            with open(path, "rb") as fh:
                data = json.loads(fh.read(MAX_BYTES).decode("utf-8-sig"))
        except FileNotFoundError:
            return DeepSpeedJson(where, value, problem=f"{value} is not here")
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            return DeepSpeedJson(where, value, problem=f"{value} is not readable JSON ({type(exc).__name__})")
    else:
        data = value
    if not isinstance(data, dict):
        return DeepSpeedJson(where, path, problem="not a JSON object")
    zero = data.get("zero_optimization")
    raw = zero.get("stage") if isinstance(zero, dict) else None
    stage = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if isinstance(raw, str) and raw.strip().isdigit():
        stage = int(raw.strip())
    if not isinstance(zero, dict):
        stage = 0  # no zero_optimization section: DeepSpeed's default, stage 0
    opt = data.get("optimizer")
    optimizer = str(opt.get("type") or "?") if isinstance(opt, dict) else None
    return DeepSpeedJson(
        where,
        path,
        stage=stage,
        optimizer=optimizer,
        bf16=_enabled(data.get("bf16", data.get("bfloat16"))),
        fp16=_enabled(data.get("fp16")),
    )
