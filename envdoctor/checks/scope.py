"""What could be checked at all: an environment without the training stack is not a clean one."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule

#: Without every one of these, nothing of a GRPO run is installed where envdoctor looked.
STACK = ("trl", "transformers", "torch", "vllm")


@rule("ENV001")
def stack_not_installed(ctx: Context) -> Iterator[Hit]:
    if any(ctx.version(name) for name in STACK):
        return
    declared = ctx.facts.extra.get("declared")
    if declared is not None:  # the hook: a repository's declarations, ranges included
        if any(name in (declared.get("stack") or {}) for name in STACK):
            return  # declared as a range: the DCL rules judge what is decided and what is open
        yield hit(
            "no training stack declared: the repository's declarations name none of trl, "
            "transformers, torch or vllm, so nothing of the GRPO run's packages was checked",
            fix="declare the stack the training installs (e.g. `trl[vllm]==1.16.0` in "
            "requirements.txt or pyproject.toml), point at its file with "
            "`--requirements FILE`, or name it with `--assume trl==1.16.0`",
            missing=list(STACK),
        )
        return
    where = (
        "the Python environment envdoctor runs in" if ctx.facts.live else f"the snapshot {ctx.facts.source}"
    )
    trl = ctx.trl
    judged = (
        f"the TRL-dependent config rules and memory plan assume TRL {trl.version}, {trl.why.split('; ')[-1]}"
        if trl.assumed
        else "the version-dependent config rules judged against no release"
    )
    yield hit(
        f"no training stack to check here: {where} has none of trl, transformers, torch "
        f"or vllm, so nothing of the GRPO run's packages was checked ({judged})",
        fix="run envdoctor inside the training environment (`<venv>/bin/python -m "
        "envdoctor check …`), or check a snapshot taken there (`envdoctor collect -o "
        "facts.json` there, then `envdoctor check --facts facts.json …`), or name the "
        "stack it runs: `--assume trl==1.16.0 --assume vllm==0.26.0`",
        missing=list(STACK),
    )


@rule("ENV002", needs=("plan",))
def other_framework_trains(ctx: Context) -> Iterator[Hit]:
    """Once, at info: the run's trainer is another framework's (plan.framework), and which of
    TRL's rule families envdoctor left out for it (their premise, TRL's GRPOTrainer reading the
    config, does not hold); the rules of what the run uses whatever trains it still ran."""
    from envdoctor.plan.framework import FAMILIES, leaves_out

    framework = ctx.plan.framework
    if framework is None:
        return
    out = [need for need in FAMILIES if leaves_out(framework, need)]
    if not out:
        return
    underneath = (
        "; it runs TRL's GRPOTrainer underneath, so TRL's release, its vLLM range and TRL's known "
        "failures are still judged"
        if framework.runs_trl
        else ""
    )
    yield hit(
        f"{framework.name} trains this run ({framework.evidence}), not a script of TRL's "
        f"GRPOTrainer reading GRPOConfig: not applied: {'; '.join(FAMILIES[n] for n in out)}"
        f"{underneath}; the packages installed together, the GPUs, vLLM's own memory and the "
        "allocator environment are judged as for any run",
        fix=f"check the run's {framework.name} configuration with {framework.name}'s own "
        "validation" + (f" ({framework.sources[0]})" if framework.sources else ""),
        framework=framework.key,
        evidence_said=framework.evidence,
        not_applied=out,
    )
