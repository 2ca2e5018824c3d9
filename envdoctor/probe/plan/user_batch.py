"""The user's first batch and reward functions, as the probe's worker is given them.

Envdoctor's side of the probe running on the user's data: the rows come from the sample the
data rules read (``envdoctor.checks.data``: a local path or the Hugging Face caches, bounded,
read-only, nothing downloaded); the reward functions from ``reward_plan`` (read as source here,
imported only in the worker). What the worker does with them is ``user_rewards.py``, beside the
worker. Where either cannot be used, the spec says why and the probe runs its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envdoctor.plan.values import as_bool
from envdoctor.probe.plan.reward_plan import from_cli, from_script

if TYPE_CHECKING:
    from envdoctor.checks.context import Context
    from envdoctor.probe.plan.model_source import ProbeModel

#: rows handed to the worker at most (the step's batch is the first of them, repeated if fewer)
PROBE_ROWS = 64
#: the rows' JSON in the worker's spec at most (halved until they fit)
MAX_ROWS_BYTES = 4 * 1024 * 1024
NOT_CACHED = "not checked (not cached; nothing is downloaded)"


def user_inputs(ctx: Context, model: ProbeModel | None) -> dict[str, Any]:
    """ProbeSpec's ``user_data`` and ``user_rewards`` for the plan in ``ctx``."""
    data = data_for_probe(ctx)
    if model is not None and model.faithful and model.tokenizer_dir:
        data["user_tokenizer"] = model.name or model.source
    if not data.get("rows"):
        why = data.get("reason", "no rows")
        return {
            "user_data": data,
            "user_rewards": {
                "own_reason": f"the user's data was not used ({why}), and the reward functions "
                "take its columns as keywords"
            },
        }
    return {"user_data": data, "user_rewards": rewards_for_probe(ctx)}


def data_for_probe(ctx: Context) -> dict[str, Any]:
    """The first rows of the run's dataset with vLLM's prompt limit, or the reason none."""
    from envdoctor.checks.data import probe_view

    view, limits = probe_view(ctx)
    sample = view.sample
    if sample is None:
        return {
            "reason": "the run names no dataset (dataset_name, or one load_dataset(...) with "
            "literal arguments)"
        }
    base: dict[str, Any] = {"dataset": sample.name, "split": sample.split, "source": sample.source}
    if sample.not_read:
        return {**base, "reason": sample.not_read}
    if view.transformed:
        return {**base, "reason": f"{view.transformed}: the trainer sees other rows than those on disk"}
    rows = sample.rows[:PROBE_ROWS]
    try:
        size = len(json.dumps(rows))
    except (TypeError, ValueError):
        return {**base, "reason": "its rows hold values that are not text or numbers (images, bytes)"}
    while size > MAX_ROWS_BYTES and len(rows) > 1:
        rows = rows[: len(rows) // 2]
        size = len(json.dumps(rows))
    if size > MAX_ROWS_BYTES:
        return {**base, "reason": f"its first row alone is over {MAX_ROWS_BYTES // 2**20} MiB"}
    return {
        **base,
        "rows": rows,
        "rows_read": len(sample.rows),
        "columns": list(sample.columns),
        "remove_unused_columns": bool(as_bool(ctx.config.get("remove_unused_columns", False))),
        **limits,
    }


def rewards_for_probe(ctx: Context) -> dict[str, Any]:
    """What the worker imports: TRL's CLI ``reward_funcs``, else the training script's."""
    from envdoctor.checks.data import script_path

    trainer = ctx.plan.trainer
    if trainer is not None and trainer.launcher == "trl-grpo":
        names = ctx.config.get("reward_funcs")
        if isinstance(names, str):
            names = [names]
        if isinstance(names, list) and names:
            return from_cli([str(n) for n in names], Path.cwd())
        return {"own_reason": "trl grpo is given no reward_funcs"}
    path = script_path(ctx)
    if path is None:
        return {"own_reason": "the launch line names no training script to read the reward functions from"}
    spec = from_script(path)
    module = trainer.module if trainer is not None else None
    if module and "script" in spec:  # python -m pkg.train: imported as the package's module
        name = module if path.name != "__main__.py" else f"{module}.__main__"
        spec["module"] = name
        spec["root"] = str(path.resolve().parents[len(name.split(".")) - 1])
    if "script" in spec:
        spec["cwd"] = str(Path.cwd())  # where findings show files from
    return spec
