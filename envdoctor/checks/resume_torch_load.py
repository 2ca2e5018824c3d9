"""PKG015: a run that resumes from a checkpoint on a transformers whose Trainer refuses (or fails)
to torch.load the checkpoint's state under torch < 2.6 (rules/knowledge/resume_torch_load.yaml).

transformers 4.52.0 added ``check_torch_load_is_safe()`` before every torch.load of a checkpoint
(CVE-2025-32434: torch.load is unsafe even with weights_only=True before torch 2.6): resuming
loads the optimizer, scheduler and scaler states and raises ValueError; 5.0 checks at the RNG
state too. 4.51.x loads the RNG state with weights_only=True without allowlisting numpy below
torch 2.6, and fails with an UnpicklingError. Whether the run resumes is read from the training
script's ``trainer.train(resume_from_checkpoint=…)`` (``plan.train_calls``) and the config.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.plan.values import as_bool

KEY = "resume_from_checkpoint"


def _base(version: str) -> str:
    """``2.5.1+cu124`` -> ``2.5.1``: a local build is its release."""
    return version.split("+", 1)[0]


def _range(kb: dict[str, Any], transformers: str, torch: str) -> dict[str, Any] | None:
    for row in kb.get("ranges") or []:
        if versions.satisfies(transformers, str(row.get("transformers", ""))) and versions.satisfies(
            _base(torch), str(row.get("torch", ""))
        ):
            return dict(row)
    return None


def _resume(ctx: Context) -> tuple[str, str] | None:
    """(how sure: always / maybe, what says so) where the run resumes; None where it does not."""
    from envdoctor.plan.train_calls import train_calls

    value = ctx.config.get(KEY)
    set_in_config = value not in (None, False, "") and as_bool(value) is not False
    origin = ctx.plan.config_origin.get(KEY, "")
    said_cfg = f"{KEY}: {value!r}{f' ({origin})' if origin else ''}"
    calls = train_calls(ctx.plan)
    if calls is None:
        trainer = ctx.plan.trainer
        if not set_in_config or (trainer is not None and trainer.launcher == "trl-grpo"):
            return None  # TRL's own grpo script calls trainer.train() and never reads the key
        return "maybe", f"{said_cfg}, if the training script hands it to trainer.train()"
    resume = calls.resume
    if resume is None:
        return None
    said = f"{resume.text} in {resume.where}"
    if resume.how == "config:resume_from_checkpoint":
        return ("always", f"{said}, with {said_cfg}") if set_in_config else None
    if resume.how == "maybe":
        return "maybe", f"{said}, when that names a checkpoint: a restart that finds one"
    return "always", said


def _remedies(ctx: Context, kb: dict[str, Any]) -> list[Remedy]:
    from envdoctor.checks.resolver import plan_packages

    out = []
    safe = str(kb.get("safe_torch", "2.6.0"))
    plan = plan_packages(ctx, {"torch": f">={safe}"}, explain=False)
    if not plan.unfixable and "torch" in plan.changes:
        out.append(
            Remedy(
                packages=dict(sorted(plan.changes.items())),
                fix=f"{plan.command}  # torch >= {safe}: transformers loads the checkpoint's state",
            )
        )
    before = kb.get("before")
    if before:
        old = plan_packages(ctx, {"transformers": f"<={before}"}, explain=False)
        if not old.unfixable and "transformers" in old.changes:
            out.append(
                Remedy(
                    packages=dict(sorted(old.changes.items())),
                    fix=f"{old.command}  # a transformers before the check "
                    "(it keeps torch.load's old default)",
                )
            )
    return out


@rule("PKG015")
def resume_torch_load_refused(ctx: Context) -> Iterator[Hit]:
    """A resume that transformers' torch.load guard (or weights_only load) refuses under torch < 2.6."""
    tf, torch = ctx.version("transformers"), ctx.version("torch")
    if tf is None or torch is None or versions.parse(tf) is None or versions.parse(_base(torch)) is None:
        return
    kb = ctx.kb.resume_torch_load
    row = _range(kb, tf, torch)
    if row is None:
        return
    script = ctx.plan.script
    if script is not None and script.own_grpo:
        return  # a GRPO loop of its own: no transformers Trainer resumes
    if row.get("save_only_model") and as_bool(ctx.config.get("save_only_model")) is True:
        return  # checkpoints without optimizer state, weights in safetensors: nothing torch.loads
    resume = _resume(ctx)
    if resume is None:
        return
    sure, said = resume
    where = " ".join(str(row.get("where", "")).split())
    raises = str(row.get("raises", ""))
    lead = "The run resumes from a checkpoint" if sure == "always" else "The run can resume from a checkpoint"
    message = (
        f"{lead} ({said}), and transformers {tf} with torch {torch} fails to load its state: {where}. "
        f"It raises '{raises}' before the first resumed step"
    )
    if sure != "always":
        message += " (a run that starts without a checkpoint trains; its restart fails)"
    remedies = _remedies(ctx, kb)
    fix = "; or ".join(r.fix for r in remedies) or f"install torch >= {kb.get('safe_torch', '2.6.0')}"
    yield hit(
        message,
        fix=fix,
        severity="error" if sure == "always" else "warning",
        remedy=remedies or None,
        transformers=tf,
        torch=torch,
    )
