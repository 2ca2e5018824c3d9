"""KNF001: a confirmed breakage of the catalogue (rules/knowledge/known_failures/) matches this stack
(``envdoctor.checks.matching`` judges its ``when``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from envdoctor.checks.context import Context
from envdoctor.checks.matching import (
    config_default,
    confirmed_break,
    declared_spec,
    imported_escape,
    imported_unseen,
    matches,
    matching,
    runs_grpo,
    script_fact,
    script_sets,
    version_unknown,
)
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.knowledge.failures import KnownFailure

__all__ = ["config_default", "confirmed_break", "known_failure", "matches", "matching", "severity"]


def _thread(failure: KnownFailure) -> str:
    url = failure.sources[0]
    parts = url.removeprefix("https://github.com/").split("/")
    if url.startswith("https://github.com/") and len(parts) >= 4 and parts[2] in ("issues", "pull"):
        return f"{parts[0]}/{parts[1]}#{parts[3]}"
    return url


def _stack(ctx: Context, failure: KnownFailure) -> str:
    return " + ".join(f"{name} {ctx.version(name) or '(release not known)'}" for name in failure.packages)


#: a ``when.facts`` fact of the training script as a finding says it (``{where}``: the call)
FACT_SAID = {
    "vllm_in_process_off": "{where} loads the model with vLLM off (fast_inference False, or left out: "
    "the loader's default)",
}


def _facts_said(ctx: Context, failure: KnownFailure) -> str:
    """What the training script shows for the entry's ``when.facts``, and the releases not known
    (``version_unknown``): ``; train.py:12 … loads the model with vLLM off``."""
    said = [FACT_SAID[fact].format(where=script_fact(ctx, fact)) for fact in failure.facts]
    for name in version_unknown(ctx, failure):
        declared = declared_spec(ctx, name)
        how = (
            f"declared as {name}{declared}, no exact release"
            if declared
            else f"{name} is not installed, declared or assumed"
        )
        said.append(
            f"which {name} release runs is not known ({how}): the failure holds for "
            f"{name} {failure.packages[name]}"
        )
    return "".join(f"; {s}" for s in said)


def _fix_asks(failure: KnownFailure) -> str:
    """``; the fix asks trl>=0.20.0 (why)`` when the fix names a later release than ``fixed_in``
    (one that also fixes a neighbouring failure): the message and the fix then agree."""
    import re

    command, _, why = failure.fix.partition("#")
    out = []
    for name, fixed in failure.fixed_in.items():
        for want in re.findall(rf"\b{re.escape(name)}\s*>=\s*([\w.]+)", command):
            if want != str(fixed):
                out.append(f"{name}>={want}")
    if not out:
        return ""
    return f"; the fix asks {', '.join(out)}" + (f": {why.strip()}" if why.strip() else "")


def _fix(ctx: Context, failure: KnownFailure) -> tuple[str, Remedy | list[Remedy] | None]:
    """A broken pair's or a fixed release's fix as exact versions (the package resolver, which
    avoids this failure and every other one it knows); else the catalogue's own fix (also for a
    pair that breaks only with what envdoctor cannot see, such as how a binary was built: moving
    a version is not its fix)."""
    if failure.fixed_in or (len(failure.packages) >= 2 and failure.depends_on == "run"):
        from envdoctor.checks.resolver import plan_fix

        if failure.facts and failure.fixed_in:
            # the trigger is the script's use of what the range's first release brought (Unsloth's
            # GRPOTrainer from 2025.2.1): a move below the range takes that away, so forward only
            fix, remedy = _forward(ctx, failure)
            if remedy is not None:
                return f"{fix}  # or by hand: {failure.fix}", remedy
        fix, remedy = plan_fix(ctx, *failure.packages)
        if remedy is not None:
            moved = set(remedy.packages)
            if failure.fixed_in and not moved & set(failure.fixed_in):
                from envdoctor.checks.resolver import plan_packages

                alt = plan_packages(ctx, {n: f">={v}" for n, v in failure.fixed_in.items()}, explain=False)
                if alt.command:
                    fix += f"  # or, with the release that fixes it: {alt.command}"
            return fix, remedy
    from envdoctor.checks.catalogue_fix import config_remedies

    return failure.fix, config_remedies(failure) or None


def _forward(ctx: Context, failure: KnownFailure) -> tuple[str, Remedy | None]:
    """The resolver's plan with the entry's fixed releases (``>=`` each), where it moves them."""
    from envdoctor.checks.resolver import plan_packages

    plan = plan_packages(ctx, {n: f">={v}" for n, v in failure.fixed_in.items()}, explain=False)
    if plan.unfixable or not set(plan.changes) & set(failure.fixed_in):
        return "", None
    return plan.command, plan.remedy()


#: what an entry that is not ``depends_on: run`` hinges on, as a finding says it
HINGES = {
    "data": "the training data",
    "load": "the load (how long the run goes, a checkpoint save, timing)",
    "hardware": "the hardware",
    "install": "how the packages were built or installed",
    "model": "the model",
    "code": "the training code's arguments",
}


def likely(ctx: Context, failure: KnownFailure) -> str | None:
    """What envdoctor read that makes ``failure`` likely (every condition of its
    ``likely_with`` holds), in words; None where it has none or one does not hold."""
    from envdoctor.checks.matching import config_holds

    if failure.depends_on == "run" or not failure.likely_with:
        return None
    said = []
    for key, wanted in failure.likely_config.items():
        if not config_holds(ctx, key, wanted):
            return None
        if key in ctx.config:
            said.append(f"the config sets {key}: {ctx.config[key]!r}")
        else:
            said.append(f"{key} is {config_default(ctx, key)!r} by TRL's default")
    for fact in failure.likely_facts:
        why = _fact(ctx, fact)
        if why is None:
            return None
        said.append(why)
    return "; ".join(said)


def _fact(ctx: Context, fact: str) -> str | None:
    """Whether a ``LIKELY_FACTS`` fact holds for this run, said with where envdoctor read it."""
    script = ctx.plan.script if ctx.plan.script is not None and not ctx.plan.script.problem else None
    if fact == "vllm_in_process":
        if script is not None and script.vllm_in_process:
            return f"{script.vllm_in_process} starts vLLM in the training process"
        return None
    if fact == "conversational":
        if script is not None and script.chat_messages:
            return f"the training code builds chat messages ({script.chat_messages})"
        from envdoctor.checks.data import data_view

        view = data_view(ctx)
        if view.sample is not None and view.conversational:
            return "the dataset's prompts are chat messages"
    return None


def _depends_said(ctx: Context, failure: KnownFailure, why_likely: str | None) -> str:
    """What the failure hinges on and what would show it, for an entry not ``run``."""
    if failure.depends_on == "run":
        return ""
    needs = f"; it needs {'; and '.join(failure.data)}" if failure.data else ""
    seen = f": likely here, {why_likely}" if why_likely else ", which envdoctor cannot see"
    return (
        f"{needs}; whether it strikes depends on {HINGES[failure.depends_on]}{seen}; check {failure.evidence}"
    )


def severity(ctx: Context, failure: KnownFailure) -> str:
    """As the catalogue's data says (``depends_on``): an error when the failure happens on every
    run of this configuration (``run``); advice (info) when it hinges on what envdoctor cannot
    see (the data, the load, the hardware, an install detail, the model, the training code's
    arguments), the message saying what to check; a warning where a fact envdoctor reads makes it
    likely (``likely_with``: chat messages in the training code for TRL 0.19.0's special tokens).
    A failure judged on an assumed TRL release is a warning (``Context.on_trl``)."""
    base = failure.severity
    if base == "info" and failure.kind != "slower" and likely(ctx, failure) is not None:
        base = "warning"
    if failure.unless_imported and base == "error" and imported_unseen(ctx, failure):
        return "warning"  # a library in the stack may patch it away: not seen, so not certain
    if base == "error" and version_unknown(ctx, failure):
        return "warning"  # the script shows the trigger; which release runs is not known
    if failure.trainer == "grpo" and base == "error" and runs_grpo(ctx)[0] is None:
        base = "warning"  # GRPOTrainer's own failure in a run not seen to build one: likely
    if base == "error" and "trl" in failure.packages and _trl_modified(ctx):
        base = "warning"  # a modified copy of trl: its code may differ from the release's
    return ctx.on_trl(base) if "trl" in failure.packages else base


def _trl_modified(ctx: Context) -> str | None:
    """The trainer class the script imports from trl that no TRL release has, where it does:
    the installed trl is a modified copy (a fork installed as ``trl``), whose code the
    catalogue's TRL ranges do not describe (set 23's SafeRank-GRPO: a fork of TRL 0.21 that
    guards the vLLM import the release fails on)."""
    script = ctx.plan.script
    return script.trl_added if script is not None and not script.problem else None


@rule("KNF001")
def known_failure(ctx: Context) -> Iterator[Hit]:
    from envdoctor.checks.context import vllm_unused
    from envdoctor.checks.packages import unused_vllm

    unused = vllm_unused(ctx)
    for failure in matching(ctx):
        fixed = ", ".join(f"{name} {v}" for name, v in failure.fixed_in.items()) + _fix_asks(failure)
        fix, remedy = _fix(ctx, failure)
        unseen = imported_unseen(ctx, failure) if failure.unless_imported else None
        found = hit(
            f"{_stack(ctx, failure)}: {failure.title}"
            + (f" (fixed in {fixed}; {_thread(failure)})" if fixed else f" ({_thread(failure)})")
            + _depends_said(ctx, failure, likely(ctx, failure))
            + _facts_said(ctx, failure)
            + (f"; {unseen}" if unseen else "")
            + _trainer_said(ctx, failure)
            + _modified_said(ctx, failure),
            fix=fix,
            remedy=remedy,
            severity=severity(ctx, failure),
            id=failure.id,
            kind=failure.kind,
            references=list(failure.sources),
        )
        # a failure of vLLM's (vLLM among its packages) in a run that never starts vLLM's engine
        # is advice, unless it strikes at import (TRL imports vLLM whenever it is installed)
        if unused and "vllm" in failure.packages and not failure.at_import:
            found = unused_vllm(found, unused)
        yield found
    yield from _patched_away(ctx)
    yield from _script_sets_away(ctx)


def _script_sets_away(ctx: Context) -> Iterator[Hit]:
    """Failures that are a missing attribute the training script assigns itself (``when.
    unless_script_sets``: ``model.warnings_issued = {}`` before building the trainer): info."""
    from envdoctor.knowledge import checkable_failures

    script = ctx.plan.script
    if script is None or script.problem or not script.attr_writes:
        return
    for failure in checkable_failures():
        if not failure.unless_script_sets or failure.rule is not None or failure.triage_only:
            continue
        found = script_sets(ctx, failure)
        if found is None or not matches(ctx, replace(failure, unless_script_sets=())):
            continue
        attr, where = found
        yield hit(
            f"{_stack(ctx, failure)}: {failure.title} ({_thread(failure)}); the training code sets "
            f"{attr} itself ({where}), so the run escapes it",
            fix=f"nothing while {where} sets {attr}; without it: {failure.fix}",
            severity="info",
            id=failure.id,
            kind=failure.kind,
            references=list(failure.sources),
        )


def _modified_said(ctx: Context, failure: KnownFailure) -> str:
    added = _trl_modified(ctx) if "trl" in failure.packages else None
    if not added:
        return ""
    return (
        f"; the training script imports {added} from trl, a class no TRL release has: the installed "
        "trl is a modified copy, and whether it keeps this release's code is not known"
    )


def _trainer_said(ctx: Context, failure: KnownFailure) -> str:
    """For an entry of GRPOTrainer's own (``when.trainer``): where the run was not seen to build
    one, that the finding holds if it does, and why it was not seen."""
    if failure.trainer != "grpo":
        return ""
    grpo, why = runs_grpo(ctx)
    return "" if grpo else f"; if the run builds a GRPOTrainer ({why})"


def _patched_away(ctx: Context) -> Iterator[Hit]:
    """Failures the training script escapes by importing a library that patches them on
    import (``when.unless_imported``): said as info, with the library's patch."""
    from envdoctor.knowledge import checkable_failures

    script = ctx.plan.script
    if script is None or not script.patched_by:
        return
    for failure in checkable_failures():
        if not failure.unless_imported or failure.rule is not None or failure.triage_only:
            continue
        lib = imported_escape(ctx, failure)
        if lib is None or not matches(ctx, replace(failure, unless_imported={})):
            continue
        yield hit(
            f"{_stack(ctx, failure)}: {failure.title} ({_thread(failure)}); {script.path} imports "
            f"{lib} ({failure.unless_imported[lib]} patches it on import), so the run escapes it",
            fix=f"nothing while {script.path} imports {lib} first; without it: {failure.fix}",
            severity="info",
            id=failure.id,
            kind=failure.kind,
            patched_by=lib,
            references=list(failure.sources),
        )
