"""CFG010: a GRPOConfig string-choice value the TRL that runs refuses.

The accepted values per TRL release are data (rules/knowledge/grpo_config_choices.yaml, derived
from TRL's source at its tags by scripts/derive_grpo_config_choices.py): the checks in
GRPOConfig.__post_init__ and the if/elif chains over ``self.<key>`` in GRPOTrainer whose last
``else`` raises. A key no check refuses (another value falls through to a default branch) is
not judged; a check that runs only under another setting is judged where the config (or TRL's
default) gives that setting.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.knowledge import beyond_horizon
from envdoctor.plan.interface import VALUE_UNKNOWN

#: how a message says where each stage fails
STAGE_SAID = {
    "config_init": "GRPOConfig(...) raises ValueError before the model loads",
    "trainer_init": "GRPOTrainer(...) raises ValueError once the model is loaded",
    "first_step": "the first training step raises ValueError, after the model has loaded",
}


def span_of(spans: list[dict[str, Any]], trl: str | None) -> dict[str, Any] | None:
    """The reading of the release ``trl`` (inside one span's first..last), else None."""
    for span in spans:
        if versions.at_least(trl, str(span["first"])) and not versions.at_least(trl, _after(span)):
            return span
    return None


def _after(span: dict[str, Any]) -> str:
    """A version just past the span's last release (its next patch): a release between the span's
    last one and the next span's first was not read, and is not judged."""
    parts = str(span["last"]).split(".")
    parts[-1] = str(int(parts[-1]) + 1) if parts[-1].isdigit() else parts[-1]
    return ".".join(parts)


def _refusing(ctx: Context, span: dict[str, Any], value: str) -> dict[str, Any] | None:
    """The check of ``span`` that refuses ``value`` in this run: its own (every run), else one of
    its conditional checks whose setting the config (or TRL's default) gives (``scale_rewards``
    is checked only under ``multi_objective_aggregation: sum_then_normalize``, TRL's default);
    None when none does."""
    if span["refused_at"] != "silent" and value not in span["accepted"]:
        return span
    for cond in span.get("conditional") or []:
        if value not in cond["accepted"] and _holds(ctx, str(cond["when"])) is True:
            return {
                **span,
                "accepted": cond["accepted"],
                "refused_at": cond["at"],
                "where": span["where"] or f"trl/trainer/grpo_trainer.py, under {cond['when']}",
            }
    return None


def _holds(ctx: Context, when: str) -> bool | None:
    """Whether a check's condition over the config (``self.<key> == 'v'``, ``self.<key>``,
    ``not ...``, ``a and b``) holds for this run; None when a part is not read."""
    import ast

    from envdoctor.checks import matching

    def setting(node: ast.expr) -> Any:
        if not (isinstance(node, ast.Attribute) and ast.unparse(node.value) in ("self", "args", "self.args")):
            return matching._MISSING
        key = node.attr
        if key in ctx.config:
            return ctx.config[key]
        if key in ctx.plan.config_origin:
            return matching._MISSING  # set, value not read
        return matching.config_default(ctx, key)

    def judge(node: ast.expr) -> bool | None:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            parts = [judge(v) for v in node.values]
            return False if False in parts else (None if None in parts else True)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = judge(node.operand)
            return None if inner is None else not inner
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq))
            and isinstance(node.comparators[0], ast.Constant)
        ):
            got = setting(node.left)
            if got is matching._MISSING:
                return None
            same = got == node.comparators[0].value
            return same if isinstance(node.ops[0], ast.Eq) else not same
        got = setting(node)
        return None if got is matching._MISSING or not isinstance(got, bool) else got

    try:
        return judge(ast.parse(when, mode="eval").body)
    except SyntaxError:
        return None


def _as_trl_reads(ctx: Context, key: str, origin: str) -> Any:
    """The value as GRPOConfig gets it. A string-choice field is typed ``str``: TRL's parser keeps
    a command line's text (``--scale_rewards False`` is the string ``"False"``, which envdoctor's
    launch reading types as a boolean)."""
    from envdoctor.script_args import arg_text

    value = ctx.config.get(key)
    trainer = ctx.plan.trainer
    if origin == "command line" and trainer is not None and not isinstance(value, str):
        text = arg_text(trainer.script_args, key)
        return text if text is not None else value
    return value


def first_accepting(spans: list[dict[str, Any]], trl: str | None, value: str) -> str | None:
    """The first release after ``trl`` whose check takes ``value`` (and every later one does)."""
    later = [s for s in spans if versions.below(trl, str(s["first"]))]
    for i, span in enumerate(later):
        if all(value in s["accepted"] and s["refused_at"] != "silent" for s in later[i:]):
            return str(span["first"])
    return None


@rule("CFG010", needs=("plan", "trl-keys"))
def config_value_refused(ctx: Context) -> Iterator[Hit]:
    table = ctx.kb.grpo_choices
    keys: dict[str, list[dict[str, Any]]] = table.get("choices") or {}
    aliases: dict[str, dict[str, Any]] = table.get("aliases") or {}
    trl = ctx.trl.version
    if not keys or versions.parse(trl) is None:
        return
    for key, origin in ctx.plan.config_origin.items():
        spans = keys.get(key)
        value = _as_trl_reads(ctx, key, origin)
        if not spans or origin == VALUE_UNKNOWN or not isinstance(value, str):
            continue
        if ctx.plan.not_grpo_key(key, origin):
            continue  # the script's own dataclass, or another config class, takes it
        past = beyond_horizon("trl", trl)
        newest = spans[-1]
        span = newest if past is not None else span_of(spans, trl)
        if span is None:
            continue
        span = _refusing(ctx, span, value)
        if span is None:
            continue
        if span["refused_at"] != "config_init" and _other_trainer(ctx):
            continue  # GRPOTrainer's own check: the run builds another trainer (or one not read)
        named = aliases.get(key) or {}
        alias = named.get(value) or named.get(value.lower())
        accepted = ", ".join(span["accepted"])
        said = ctx.trl.label()
        msg = (
            f"`{key}: {value}` ({origin}) is not a value TRL {said} takes: {STAGE_SAID[span['refused_at']]} "
            f"({span['where']}); it takes {accepted}"
        )
        if alias:
            since = str(alias["since"])
            msg += f". {alias['note']}: in TRL that is " + ", ".join(
                f"`{k}: {v}`" for k, v in alias["set"].items()
            )
            if versions.at_least(trl, since) is not True:
                msg += f", from TRL {since} (TRL {said} has no such setting)"
            msg += f" ({alias['references'][0]})"
        remedies = _remedies(ctx, key, value, span, spans, alias)
        severity = ctx.on_trl("error")
        if past is not None:
            # a release envdoctor has not read: the newest one it has refuses the value, this one may not
            severity = "info"
            msg += f"; TRL {past.version} is newer than envdoctor knows, and may take it"
        yield hit(
            msg,
            fix=remedies[0].fix if remedies else f"set `{key}` to one of {accepted}",
            remedy=remedies,
            severity=severity,
            key=key,
            value=value,
            accepted=list(span["accepted"]),
            refused_at=span["refused_at"],
            trl=trl,
        )


def _other_trainer(ctx: Context) -> str | None:
    """The trainer the run builds where it is not TRL's GRPOTrainer: one envdoctor could not read
    (a class of its own imported from afar, a copy added to the installed trl), else what
    ``runs_grpo`` rules out (TRL's other trainers, a repository class deriving from no
    GRPOTrainer, ``trl sft``), else the repository's own trainer the hook found for a config no
    launch line runs (``_own_trainer``): GRPOTrainer's checks at init and in the loss are not its."""
    from envdoctor.checks.config import _own_trainer
    from envdoctor.checks.matching import runs_grpo

    script = ctx.plan.script
    if script is not None and not script.problem and script.unread_trainer:
        return script.unread_trainer
    grpo, why = runs_grpo(ctx)
    if grpo is False:
        return why
    return None if grpo else _own_trainer(ctx)


def _remedies(
    ctx: Context,
    key: str,
    value: str,
    span: dict[str, Any],
    spans: list[dict[str, Any]],
    alias: dict[str, Any] | None,
) -> list[Remedy]:
    """The candidates, in order (the fix closure prints the first that holds): the keys an alias
    means in this release, a newer release that takes the value, the nearest value this release
    takes (not where the value is an alias: its lexical neighbour is another method), and leaving
    the key at TRL's default."""
    out: list[Remedy] = []
    trl = ctx.trl.version
    means = alias is not None and versions.at_least(trl, str(alias["since"])) is True
    if alias is not None and means:
        sets = dict(alias["set"])
        out.append(Remedy(config_set=sets, fix="set " + ", ".join(f"`{k}: {v}`" for k, v in sets.items())))
    newer = first_accepting(spans, trl, value)
    if newer and beyond_horizon("trl", trl) is None:
        out.append(
            Remedy(packages={"trl": newer}, fix=f"pip install 'trl=={newer}' (it takes `{key}: {value}`)")
        )
    import difflib  # only when a value is refused (the static check loads it for nothing else)

    near = difflib.get_close_matches(value, [v for v in span["accepted"] if v != value], n=1, cutoff=0.6)
    if near and not means:  # a value TRL spells otherwise (gspo) is no typo of a neighbour (sapo)
        out.append(
            Remedy(config_set={key: near[0]}, fix=f"set `{key}: {near[0]}` (the nearest value it takes)")
        )
    out.append(Remedy(config_remove=(key,), fix=f"remove `{key}` (TRL's default, `{span['default']}`)"))
    return out
