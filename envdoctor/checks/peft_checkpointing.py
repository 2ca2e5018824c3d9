"""CFG012: TRL's GRPOTrainer with a PEFT adapter and reentrant gradient checkpointing on the
releases whose GRPOTrainer does not make the inputs require grad (rules/knowledge/
peft_gradient_checkpointing.yaml).

GRPOTrainer 0.14-0.15 wraps the model with ``get_peft_model`` and leaves checkpointing to
transformers' Trainer, which enables it at ``train()``: PEFT's own fix (enable_input_require_grads
when the model already checkpoints) never runs, the base and its embeddings are frozen, and
reentrant checkpointing records a block only when one of its inputs requires grad. The loss has
no grad_fn and the first backward raises. Where the adapter comes from (the config's
``use_peft``, the script's ``peft_config=`` / ``get_peft_model``) and whether the code enables
the input grads itself are read by ``plan.train_calls``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.plan.values import as_bool

KWARGS = "gradient_checkpointing_kwargs"
NON_REENTRANT = {"use_reentrant": False}


def _reentrant(ctx: Context, kb: dict[str, Any]) -> tuple[bool | None, str]:
    """Whether checkpointing is reentrant (None: not known, or set to a value envdoctor does
    not read) and how the message says so."""
    if ctx.value_unknown(KWARGS):
        return None, ""
    kwargs = ctx.config.get(KWARGS)
    if isinstance(kwargs, str):  # a launch flag's JSON text
        try:
            kwargs = json.loads(kwargs)
        except ValueError:
            return None, ""
    if isinstance(kwargs, dict) and "use_reentrant" in kwargs:
        chosen = as_bool(kwargs["use_reentrant"])
        return chosen, f"{KWARGS} sets use_reentrant {chosen}"
    if kwargs not in (None, {}) and not isinstance(kwargs, dict):
        return None, ""
    since = str((kb.get("reentrant_default") or {}).get("non_reentrant_since", "5.0.0"))
    tf = ctx.version("transformers")
    if tf is None or versions.parse(tf) is None:
        return (
            True,
            f"{KWARGS} does not set use_reentrant (transformers before {since} checkpoints reentrantly then)",
        )
    if versions.at_least(tf, since):
        return False, ""
    return True, (
        f"{KWARGS} does not set use_reentrant, so transformers {tf}'s gradient_checkpointing_enable "
        "checkpoints reentrantly (use_reentrant=True)"
    )


def _adapter(ctx: Context) -> tuple[str, str] | None:
    """(how sure, what says so) where the trainer gets a PEFT adapter; None where it gets none
    or the code enables the inputs' grads itself."""
    from envdoctor.plan.train_calls import train_calls

    use_peft = as_bool(ctx.config.get("use_peft")) is True
    origin = ctx.plan.config_origin.get("use_peft", "")
    said_cfg = f"use_peft: true{f' ({origin})' if origin else ''}"
    calls = train_calls(ctx.plan)
    if calls is None:  # no script read: TRL's own grpo script hands get_peft_config(model_args)
        return ("always", said_cfg) if use_peft else None
    if calls.input_grads:
        return None
    peft = calls.peft
    if peft is None:
        return None
    said = f"{peft.text} in {peft.where}"
    if peft.how == "config:use_peft":
        return ("always", f"{said}, with {said_cfg}") if use_peft else None
    return peft.how, said


def _code_keyword(ctx: Context) -> Remedy | None:
    """``gradient_checkpointing_kwargs={"use_reentrant": False}`` written into the script's own
    GRPOConfig(...) call that sets gradient_checkpointing (a config file's key would not reach
    it); None where no such call is read."""
    from envdoctor.checks.script_remedy import keyword_edits

    script = ctx.plan.script
    if script is None or KWARGS in script.config_keywords:
        return None
    if not script.config_keywords.get("gradient_checkpointing"):
        return None
    edits = keyword_edits(script, "gradient_checkpointing", f'{KWARGS}={{"use_reentrant": False}}, ')
    if not edits:
        return None
    where = ", ".join(f"{e.path} line {e.line}" for e in edits)
    return Remedy(
        files=edits,
        fix=f'pass {KWARGS}={{"use_reentrant": False}} to GRPOConfig(...) at {where} '
        "(non-reentrant checkpointing needs no input that requires grad)",
    )


def _remedies(ctx: Context, kb: dict[str, Any]) -> list[Remedy]:
    from envdoctor.checks.resolver import plan_packages

    out: list[Remedy] = []
    code = _code_keyword(ctx)
    if code is not None:
        out.append(code)
    else:
        out.append(
            Remedy(
                config_set={KWARGS: dict(NON_REENTRANT)},
                fix=f"set {KWARGS}: {{use_reentrant: false}} (non-reentrant checkpointing needs no "
                "input that requires grad)",
            )
        )
    fixed = str((kb.get("trainer") or {}).get("fixed_in", "0.16.0"))
    plan = plan_packages(ctx, {"trl": f">={fixed}"}, explain=False)
    if not plan.unfixable and "trl" in plan.changes:
        out.append(
            Remedy(
                packages=dict(sorted(plan.changes.items())),
                fix=f"{plan.command}  # GRPOTrainer calls model.enable_input_require_grads() "
                f"from TRL {fixed}",
            )
        )
    return out


@rule("CFG012", needs=("trl-trainer",))
def peft_reentrant_checkpointing(ctx: Context) -> Iterator[Hit]:
    """A PEFT adapter under reentrant checkpointing on a GRPOTrainer that leaves the inputs frozen."""
    trl = ctx.version("trl")
    if trl is None or versions.parse(trl) is None:
        return
    kb = ctx.kb.peft_gradient_checkpointing
    trainer = kb.get("trainer") or {}
    if not versions.satisfies(trl, str(trainer.get("trl", ""))):
        return
    script = ctx.plan.script
    if script is not None and (script.patched_by or script.own_grpo or script.own_trainer):
        return  # Unsloth's patched trainer, or no GRPOTrainer of TRL's
    if (
        ctx.value_unknown("gradient_checkpointing")
        or as_bool(ctx.config.get("gradient_checkpointing")) is not True
    ):
        return  # off: TRL's default before 0.22
    reentrant, how_reentrant = _reentrant(ctx, kb)
    if not reentrant:
        return
    adapter = _adapter(ctx)
    if adapter is None:
        return
    sure, said = adapter
    certain = sure == "always" and ctx.version("transformers") is not None
    fixed = str(trainer.get("fixed_in", "0.16.0"))
    symptom = str(
        kb.get("symptom") or "element 0 of tensors does not require grad and does not have a grad_fn"
    )
    origin = ctx.plan.config_origin.get("gradient_checkpointing", "")
    message = (
        f"TRL {trl}'s GRPOTrainer wraps the model in a PEFT adapter ({said}) with gradient_checkpointing on"
        f"{f' ({origin})' if origin else ''}; {how_reentrant}. The adapter freezes the base and its "
        "embeddings, so nothing entering the first checkpointed block requires grad; reentrant "
        "checkpointing then records no graph through the blocks, and GRPOTrainer before "
        f"{fixed} never calls model.enable_input_require_grads() (PEFT does only for a model that "
        f"already checkpoints when it is wrapped; transformers' Trainer enables checkpointing later, at "
        f"train()): the first backward raises '{symptom}' (or, where the adapter also trains a module "
        "outside the blocks, the blocks' LoRA weights get no gradient)"
    )
    if sure == "maybe":
        message += "; whether the adapter is attached depends on the code's condition"
    remedies = _remedies(ctx, kb)
    yield hit(
        message,
        fix="; or ".join(r.fix for r in remedies),
        severity=ctx.on_trl("error") if certain else "warning",
        remedy=remedies,
        adapter=said,
        trl=trl,
    )
