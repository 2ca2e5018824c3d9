"""Rules on the job launcher a repository declares around a bare ``python`` trainer line
(envdoctor.plan.launchers): the layout it gives, or why its process count is not known."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule


def _script(ctx: Context) -> str:
    trainer = ctx.plan.trainer
    return (trainer.script or trainer.module or "the script") if trainer is not None else "the script"


@rule("LAY017", needs=("plan",))
def job_launcher_processes_unknown(ctx: Context) -> Iterator[Hit]:
    job = ctx.plan.job
    if job is None or not (job.unknown or ctx.resolved.unresolved):
        return
    why = job.unknown or ctx.resolved.unresolved
    yield hit(
        f"{job.kind} ({job.source}) runs `{_script(ctx)}`, and how many processes it starts here is "
        f"not known: {why}. The layout rules that need the process count were not run.",
        kind=job.kind,
        source=job.source,
        why=why,
    )


@rule("LAY018", needs=("plan",))
def job_launcher_layout(ctx: Context) -> Iterator[Hit]:
    job = ctx.plan.job
    if job is None or job.unknown or job.per_node is None or ctx.resolved.unresolved:
        return
    how = "one torch.distributed job" if job.distributed else "one process that sees every GPU of its node"
    yield hit(
        f"{job.kind} ({job.source}) runs `{_script(ctx)}` with {job.describe()}: the layout follows "
        f"it ({how}), not the bare python line alone.",
        kind=job.kind,
        source=job.source,
        per_node=job.per_node,
        nodes=job.nodes or 1,
        command=(job.command or "")[:300],
    )
