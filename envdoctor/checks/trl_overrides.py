"""CFG011: a repository class deriving from a TRL trainer overrides a method the trainer calls on
``self`` with parameters the call of the TRL release that runs does not bind (or one
transformers' Trainer calls with an argument it lacks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy


@rule("CFG011", needs=("plan",))
def trl_override_signature(ctx: Context) -> Iterator[Hit]:
    """An override of a method TRL's trainer calls on ``self`` (rules/knowledge/trl_hook_calls.json,
    the call shapes of every release) that a call of the release that runs does not bind: a
    TypeError at that call. An error where no call of the release binds it, a warning where only
    some do (a call on a path the run may not take). Also transformers' Trainer hooks
    (rules/knowledge/trainer_hooks.yaml): an override with no parameter for an argument the
    installed transformers passes. Quiet where the override takes ``*args``/``**kwargs`` or
    matches, and where the project's own classes call it on ``self`` from another method (an
    override of its caller) with calls that bind it."""
    script = ctx.plan.script
    if script is None or script.problem or not script.trl_overrides:
        return
    version = ctx.trl.version
    from envdoctor.knowledge.trl_hook_calls import binds, judge, shape_text, spans_text

    seen: set[tuple[str, str]] = set()
    for ov in script.trl_overrides:
        if (ov.cls, ov.method) in seen:
            continue
        seen.add((ov.cls, ov.method))
        # the project calls it itself from its own override of a caller (``_prepare_inputs``
        # passing ``mode``), each call binding: it drives the method, TRL's call is replaced
        drives = bool(ov.own_calls) and all(binds(ov.signature, s) for s in ov.own_calls)
        verdict = judge(ov.base, ov.method, ov.signature, version) if version and not drives else None
        if verdict is not None:
            yield _trl_hit(ctx, script, ov, verdict, shape_text, spans_text)
            continue
        yield from _transformers_hook(ctx, ov)


def _trl_hit(ctx: Context, script: Any, ov: Any, verdict: Any, shape_text: Any, spans_text: Any) -> Hit:
    calls = "; ".join(shape_text(s) for s in verdict.shapes)
    unsloth = getattr(script, "patched_by", None) == "unsloth"
    severity = ctx.on_trl("error") if verdict.all_fail and not unsloth else "warning"
    written = _def(ov.method, ov.signature)
    wanted = _def(ov.method, verdict.defs or "")
    nearest = _nearest(verdict.fits, verdict.release)
    fix = (
        f"write the override as TRL {verdict.release} calls it: {wanted} (or take *args, **kwargs "
        f"and pass them on to super().{ov.method})"
    )
    remedy: list[Remedy] = []
    if nearest:
        fix += (
            f"; or install a TRL whose calls it takes (TRL {spans_text(verdict.fits)}), the nearest "
            f"being pip install 'trl=={nearest}'"
        )
        remedy.append(Remedy(packages={"trl": nearest}, fix=f"pip install 'trl=={nearest}'"))
    when = "at every call" if verdict.all_fail else "at that call (a path the run may not take)"
    said = (
        f"`{written}` in {ov.where} overrides {ov.base}.{ov.method}, which {ov.base} of TRL "
        f"{ctx.trl.label()} calls on itself with {calls}: the override does not take that call, "
        f"so it raises TypeError {when}"
    )
    if unsloth and verdict.all_fail:
        said += " (the script imports unsloth, whose patched trainer may call it otherwise)"
    return hit(
        said,
        fix=fix,
        severity=severity,
        file=ov.where.rsplit(":", 1)[0],
        line=int(ov.where.rsplit(":", 1)[1]) if ov.where.rsplit(":", 1)[-1].isdigit() else None,
        method=f"{ov.base}.{ov.method}",
        override=ov.cls,
        where=ov.where,
        signature=ov.signature,
        calls=list(verdict.shapes),
        fits=spans_text(verdict.fits) if verdict.fits else None,
        remedy=remedy or None,
    )


def _def(method: str, signature: str) -> str:
    """``def m(self, inputs, mode=…, **kwargs)`` from a parameter list as the table writes it."""
    parts = ["self"]
    for p in (x for x in signature.split(",") if x):
        parts.append("**kwargs" if p == "**" else f"{p[:-1]}=…" if p.endswith("=") else p)
    return f"def {method}({', '.join(parts)})"


def _nearest(fits: tuple[str, ...], release: str) -> str | None:
    later = [r for r in fits if versions.satisfies(r, f">{release}")]
    return later[0] if later else (fits[-1] if fits else None)


def _transformers_hook(ctx: Context, ov: Any) -> Iterator[Hit]:
    """transformers' Trainer calls a few methods on ``self`` with an argument of a given release on
    (``compute_loss(..., num_items_in_batch=…)`` from 4.46): an override with no parameter for it
    and no ``**kwargs``/``*args`` raises TypeError at every step."""
    installed = ctx.version("transformers")
    if not installed:
        return
    from envdoctor.knowledge.signature_history import Signature

    for row in ctx.kb.trainer_hooks.get("trainer_hooks") or []:
        if row.get("method") != ov.method or not versions.satisfies(installed, f">={row.get('since')}"):
            continue
        sig = Signature(ov.signature)
        arg, how = str(row.get("argument")), str(row.get("how"))
        params = sig.params()
        if how == "keyword":
            ok = sig.takes_keyword(arg)
        else:
            required, most = sig.positional()
            ok = most is None or most >= _positional_count(ov.method, params)
        if ok:
            continue
        yield hit(
            f"`{_def(ov.method, ov.signature)}` in {ov.where} overrides {ov.base}.{ov.method}, "
            f"which transformers {installed}'s Trainer calls with `{arg}` (from {row.get('since')}): "
            "the override has no parameter for it, so it raises TypeError at the first step",
            fix=str(row.get("fix") or f"add {arg}=None to the override's parameters"),
            severity=ctx.on_trl("error"),
            file=ov.where.rsplit(":", 1)[0],
            line=int(ov.where.rsplit(":", 1)[1]) if ov.where.rsplit(":", 1)[-1].isdigit() else None,
            method=f"{ov.base}.{ov.method}",
            override=ov.cls,
            where=ov.where,
            signature=ov.signature,
            argument=arg,
            since=row.get("since"),
        )


#: how many arguments transformers' Trainer passes by position to the methods whose positional
#: argument trainer_hooks.yaml records (training_step(model, inputs, num_items_in_batch),
#: _get_train_sampler(train_dataset))
_POSITIONAL = {"training_step": 3, "_get_train_sampler": 1}


def _positional_count(method: str, params: list[tuple[str, str, bool]]) -> int:
    return _POSITIONAL.get(method, len([p for p in params if p[1] in ("pos", "any")]) + 1)
