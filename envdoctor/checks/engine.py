"""Run the selected rules over a context and collect findings, never letting one crash the run.

A rule that raises becomes an error finding marked ``internal`` (the report's exit code is then
2: the verdict is incomplete, never a silent pass); one rule reports at most ``MAX_PER_RULE``
findings, then one more that says how many were left out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envdoctor.checks.context import Context, LayoutUnresolved, cuda_unused
from envdoctor.checks.registry import entry_of, needs_of, rule_ids
from envdoctor.errors import InputError
from envdoctor.findings import Finding, Severity
from envdoctor.rule_docs import rule_docs

if TYPE_CHECKING:
    from envdoctor.suppression import Suppression

MAX_PER_RULE = 50


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # rule id -> why
    #: findings a ``[tool.envdoctor] ignore`` entry silenced, with that entry
    suppressed: list[tuple[Finding, Suppression]] = field(default_factory=list)


def matches(rule_id: str, name: str, patterns: list[str]) -> bool:
    """Ruff-style selection: an id prefix (``LAY``, ``LAY003``) or a rule name."""
    return any(rule_id.startswith(p.upper()) or name == p for p in patterns)


def _missing(ctx: Context, needs: tuple[str, ...]) -> str | None:
    framework = ctx.plan.framework
    if framework is not None:
        from envdoctor.plan.framework import FAMILIES, leaves_out

        for need in needs:
            if leaves_out(framework, need):
                return f"{framework.name} trains ({framework.evidence}): {FAMILIES[need]} do not apply"
    if "cuda" in needs:
        unused = cuda_unused(ctx)
        if unused:
            return unused
    if "live" in needs and not ctx.facts.live:
        return "needs a live machine (checking a snapshot)"
    if "gpus" in needs and not ctx.facts.gpus:
        return f"no GPU facts ({ctx.facts.nvml_error or 'no GPU found'})"
    if "plan" in needs and ctx.plan.empty:
        return "no config or launch command given"
    if "vllm" in needs and not ctx.plan.use_vllm:
        return "use_vllm is off"
    if "model" in needs:
        from envdoctor.plan.model_name import NO_MODEL, names_model

        if not names_model(ctx):
            return NO_MODEL  # the memory plan loads only for a run that names a model
        from envdoctor.plan.memory.planner import model_problem

        return model_problem(ctx)
    return None


def run_rules(
    ctx: Context,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    suppress: list[Suppression] | None = None,
) -> Outcome:
    """Run the rules ``select`` picks (all by default) but those ``ignore`` names; a finding a
    ``suppress`` entry silences is kept apart, in ``Outcome.suppressed``."""
    docs = rule_docs()
    for entry_ in suppress or []:
        if not any(entry_.covers_rule(rid, d.name) for rid, d in docs.items()):
            raise InputError(
                entry_.source,
                f"{entry_.rule!r} matches no rule (`envdoctor rules` lists them: an id, an id "
                "prefix such as LAY, or a rule name)",
            )
    for flag, patterns in (("--select", select), ("--ignore", ignore)):
        for p in patterns or []:
            if not any(matches(rid, d.name, [p]) for rid, d in docs.items()):
                raise InputError(
                    flag,
                    f"{p!r} matches no rule (`envdoctor rules` lists them: an "
                    "id, an id prefix such as LAY, or a rule name)",
                )
    out = Outcome()
    for rule_id in rule_ids():  # a rule module loads only when one of its rules runs
        doc = docs[rule_id]
        if select and not matches(rule_id, doc.name, select):
            continue
        if ignore and matches(rule_id, doc.name, ignore):
            continue
        reason = _missing(ctx, needs_of(rule_id))
        if reason:
            out.skipped[rule_id] = reason
            continue
        entry = entry_of(rule_id)
        mine: list[Finding] = []
        left_out, worst = 0, Severity.INFO  # hits past MAX_PER_RULE: counted, not kept
        try:
            for h in entry.fn(ctx):
                severity = h.severity or doc.severity
                if len(mine) >= MAX_PER_RULE:
                    left_out += 1
                    worst = max(worst, severity, key=lambda s: s.rank)
                    continue
                mine.append(
                    Finding(
                        rule=rule_id,
                        severity=severity,
                        message=h.message,
                        fix=h.fix or doc.fix,
                        evidence=h.evidence,
                        remedy=h.remedy,
                        alternatives=h.alternatives,
                    )
                )
        except LayoutUnresolved as exc:  # needs the layout of a launch that does not resolve
            out.skipped[rule_id] = f"launch not resolved: {exc}"
            continue
        except InputError:
            raise  # the user's input, found bad while resolving it: exit 2 naming it
        except Exception as exc:  # a bug in a rule: reported, never a silent pass
            import traceback

            mine.append(
                Finding(
                    rule=rule_id,
                    severity=Severity.ERROR,
                    message=f"rule {rule_id} failed internally: {type(exc).__name__}: "
                    f"{str(exc)[:300]} (envdoctor could not check this; exit 2)",
                    fix="Please report this with `envdoctor collect` attached.",
                    evidence={"internal": True, "traceback": traceback.format_exc(limit=5)},
                )
            )
        if left_out:
            mine.append(
                Finding(
                    rule=rule_id,
                    severity=worst,
                    message=f"… and {left_out:,} more {rule_id} findings "
                    f"(the first {MAX_PER_RULE} are shown)",
                    fix=doc.fix,
                    evidence={"left_out": left_out},
                )
            )
        out.ran.append(rule_id)
        if suppress:
            from envdoctor.suppression import split

            mine, silenced = split(mine, suppress, doc.name)
            out.suppressed += silenced
        out.findings += mine
    return out
