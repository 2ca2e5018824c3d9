"""Turn the resolved layout into a ``ProbeSpec``: the user's launcher, with the worker as script."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from envdoctor.plan.interface import Launch
from envdoctor.probe.runner import ProbeSpec

_MODULE_FLAGS = {"-m", "--module"}


def launcher_argv(launch: Launch | None) -> list[str]:
    """The launcher part of the user's command, ready to take a script path."""
    if launch is None or launch.launcher in ("unknown", "env"):
        return [sys.executable]
    program = list(launch.program)
    if launch.launcher == "python":
        if launch.module:  # python -m pkg.train → python
            program = program[: program.index("-m")] if "-m" in program else program
        program = program or [sys.executable]
    else:
        program = [t for t in program if t not in _MODULE_FLAGS]
    if launch.launcher.startswith("trl-"):
        # `trl grpo` is accelerate launch around TRL's script: probe through accelerate
        program = ["accelerate", "launch"] + [
            tok for k, v in launch.options.items() if k in ("num_processes", "gpu_ids",
                                                            "config_file", "main_process_port")
            for tok in (f"--{k}", str(v))]
    head = program[0]
    if os.sep not in head and shutil.which(head) is None:
        local = os.path.join(os.path.dirname(sys.executable), head)
        if os.path.exists(local):  # console scripts of this venv, not on PATH
            program[0] = local
        elif head.startswith("python"):
            program[0] = sys.executable
    return program


def spec_from_context(ctx: Any, timeout_s: float = 180.0, steps: int = 1) -> ProbeSpec:
    """A probe of the plan in ``ctx`` (an ``envdoctor.checks.context.Context``)."""
    lay = ctx.layout
    trainer = ctx.plan.trainer
    env = dict(trainer.env) if trainer else {}
    gen = [] if lay.generation_mode == "colocate" else list(lay.generation)
    bf16 = ctx.config.get("bf16")
    return ProbeSpec(
        launcher=launcher_argv(trainer), env=env,
        rank_gpus={r.rank: r.gpu for r in lay.ranks} if ctx.facts.gpus else {},
        generation_gpus=gen, gpu_uuids={g.index: g.uuid for g in ctx.facts.gpus},
        timeout_s=timeout_s, steps=steps,
        bf16=bf16 if isinstance(bf16, bool) else None,
        gradient_checkpointing=bool(ctx.config.get("gradient_checkpointing", False)),
        model_family="llama" if "llama" in str(ctx.config.get("model_name_or_path", "")).lower()
        else "qwen2")
