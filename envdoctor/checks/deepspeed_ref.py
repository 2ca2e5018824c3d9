"""A frozen reference model handed to DeepSpeed with the run's optimizer section (CFG009).

TRL's trainers (and the GRPO trainers projects copied from them) prepare the reference model with
``trl.models.prepare_deepspeed``: it deep-copies the run's DeepSpeed config, lowers ZeRO stage 1/2
to 0 and calls ``deepspeed.initialize`` with no optimizer. Up to TRL 1.9.0 the copy keeps the
config's ``optimizer`` section, so DeepSpeed builds that optimizer over the frozen model; with bf16
or fp16 on, its mixed-precision wrapper flattens the trainable parameters, of which there are
none, and raises at init. ZeRO-3 keeps its own path (no flattening); an accelerate config's
``deepspeed_config`` block has no optimizer section.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.plan.deepspeed_json import DeepSpeedJson, read_deepspeed_json
from envdoctor.plan.interface import COMPUTED
from envdoctor.plan.values import as_bool
from envdoctor.script_args import coerce

#: the first TRL release whose prepare_deepspeed drops the optimizer section (read in the wheels)
FIXED_IN = "1.9.1"


def _half(ds: DeepSpeedJson, ctx: Context) -> tuple[bool | None, str]:
    """Whether DeepSpeed runs the model in bf16 / fp16 (its optimizer wrapper then flattens the
    parameters): the JSON's ``enabled``, and ``"auto"`` filled from the run's bf16 / fp16 as
    transformers' DeepSpeed integration does. None: not known."""
    # bf16: BF16_Optimizer flattens the trainable parameters at every DeepSpeed release read;
    # fp16: FP16_Optimizer filters them only in newer releases (a warning)
    sure = {"bf16": True, "fp16": None}
    for name, value in (("bf16", ds.bf16), ("fp16", ds.fp16)):
        if value is True:
            return sure[name], f"{name}.enabled true"
    autos = [name for name, value in (("bf16", ds.bf16), ("fp16", ds.fp16)) if value == "auto"]
    for name in autos:
        if name in ctx.config:
            on = as_bool(ctx.config[name])
            if on:
                return sure[name], f'{name}.enabled "auto" and {name}: true'
        elif name == "bf16" and ctx.kb.feature("bf16_default_true", ctx.trl.version):
            return True, f'bf16.enabled "auto" and TRL {ctx.trl.label()}\'s bf16 default (on)'
    if autos and any(name not in ctx.config for name in autos) and ctx.trl.version is None:
        return None, ""
    return False, ""


def _beta(ctx: Context) -> tuple[float | None, str]:
    """The run's beta and where it comes from (None: set in code, value unknown)."""
    if "beta" in ctx.config:
        raw = ctx.config["beta"]
        value = coerce(raw) if isinstance(raw, str) else raw
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value), "beta"
        return None, "beta"
    if "beta" in ctx.plan.config_origin:
        return None, "beta (set in code)"
    zero = versions.at_least(ctx.trl.version, "0.19.0")
    if zero is None:
        return None, "beta (TRL's default, release not known)"
    return (0.0 if zero else 0.04), f"TRL {ctx.trl.label()}'s default beta"


def _trl_trainer(ctx: Context) -> bool | None:
    """Whether the run builds TRL's GRPOTrainer: True when the script read builds it, None when
    no script was read (TRL's is the usual reader of a GRPO config), False for another trainer."""
    script = ctx.plan.script
    if script is None or script.problem:
        return None
    if script.own_trainer or script.unread_trainer:
        return False
    calls = any(getattr(c, "cls", "") == "GRPOTrainer" for c in script.trl_calls)
    return True if calls or script.model_by_name is not None else None


def _peft(ctx: Context) -> bool | None:
    """Whether the run trains a PEFT adapter (TRL then builds no reference model): the config's
    use_peft, a ``peft_config=`` the script gives GRPOTrainer (value not evaluated: None)."""
    use_peft = ctx.value("use_peft", False)
    if use_peft is COMPUTED:
        return None  # the script computes it
    if as_bool(use_peft):
        return True
    script = ctx.plan.script
    if script is not None and any("peft_config" in getattr(c, "keywords", ()) for c in script.trl_calls):
        return None
    return False


@rule("CFG009", needs=("plan",))
def ref_model_deepspeed_optimizer(ctx: Context) -> Iterator[Hit]:
    ds = read_deepspeed_json(ctx.plan)
    if ds is None or ds.problem or ds.optimizer is None or ds.stage is None or ds.stage >= 3:
        return
    half, half_why = _half(ds, ctx)
    if half is False:
        return
    script = ctx.plan.script
    own = script.ref_ds_prepares if script is not None and not script.problem else ()
    beta, beta_from = _beta(ctx)
    if beta == 0.0 and (own or versions.at_least(ctx.trl.version, "0.16.0")):
        return  # no reference model (TRL from 0.16; a project trainer of that lineage likewise)
    name = ds.path or "the inline DeepSpeed config"
    common: dict[str, Any] = dict(
        deepspeed_config=ds.path or ds.where, zero_stage=ds.stage, optimizer=ds.optimizer, precision=half_why
    )
    crash = (
        f"DeepSpeed builds its `optimizer` section ({ds.optimizer}) over a model with no trainable "
        f"parameter, and its {half_why.split('.')[0] if half_why else 'bf16/fp16'} wrapper raises at init, "
        "before the first step (torch.cat(): expected a non-empty list of Tensors)"
    )
    drop = f"remove the `optimizer` section from {name} (the Trainer then builds AdamW itself)"
    if own:
        sure = half is True and beta != 0.0
        yield hit(
            f"{own[0]} hands the frozen reference model to DeepSpeed with {name} (ZeRO stage "
            f"{ds.stage}, lowered to 0 by TRL's prepare_deepspeed; {beta_from} {beta}): {crash}",
            fix=f"{drop}; or use ZeRO-3; or prepare the reference model with "
            "accelerator.prepare_model(ref_model, evaluation_mode=True) under ZeRO-1/2",
            severity="error" if sure else "warning",
            where=own[0],
            **common,
        )
        return
    trl = _trl_trainer(ctx)
    if trl is False:
        if script is not None and script.unread_trainer:
            yield hit(
                f"the run builds {script.unread_trainer}, whose source envdoctor could not read; a GRPO "
                f"trainer copied from TRL's ({beta_from} {beta}) prepares its frozen reference model "
                f"with TRL's prepare_deepspeed, which lowers ZeRO stage {ds.stage} of {name} to 0 and "
                f"keeps its `optimizer` section: {crash}",
                fix=f"{drop}; or use ZeRO-3; or prepare the reference model with "
                "accelerator.prepare_model(ref_model, evaluation_mode=True) under ZeRO-1/2",
                severity="info",  # rests on a trainer envdoctor could not read (issue #35)
                trainer=script.unread_trainer,
                **common,
            )
        return
    keeps = versions.at_least(ctx.trl.version, FIXED_IN)
    if keeps is not False:
        return  # TRL 1.9.1+ drops the section (or the release is not known)
    builds = _peft(ctx)
    if builds is True:
        return  # an adapter: TRL builds no reference model
    version = ctx.trl.version or ""
    parsed = versions.parse(version)
    dev = parsed is not None and parsed.is_prerelease
    sure = trl is True and half is True and beta is not None and builds is False and not dev
    why_ref = (
        "builds a frozen reference model whenever no PEFT adapter is trained"
        if versions.at_least(version, "0.16.0") is False
        else f"builds a frozen reference model ({beta_from} {beta})"
    )
    yield hit(
        f"TRL {ctx.trl.label()}'s GRPOTrainer {why_ref} and hands it to trl.models.prepare_deepspeed, "
        f"which lowers ZeRO stage {ds.stage} of {name} to 0 and keeps its `optimizer` section: {crash}"
        + ("" if trl is True else " (the training script was not read: TRL's GRPOTrainer assumed)"),
        fix=f"{drop}; or pip install 'trl=={FIXED_IN}' or newer (its prepare_deepspeed drops the "
        "section); or use ZeRO-3",
        severity=ctx.on_trl("error") if sure else "warning",
        remedy=_remedies(ctx, beta),
        **common,
    )


def _remedies(ctx: Context, beta: float | None) -> list[Remedy]:
    out = [
        Remedy(
            packages={"trl": FIXED_IN},
            fix=f"pip install 'trl=={FIXED_IN}' (its prepare_deepspeed drops the optimizer section)",
        )
    ]
    if beta and versions.at_least(ctx.trl.version, "0.16.0"):
        out.append(
            Remedy(
                config_set={"beta": 0.0},
                fix="beta: 0.0 (no KL term: TRL builds no reference model)",
            )
        )
    return out
