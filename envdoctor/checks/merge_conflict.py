"""LAY026: a shell script the launch runs holds an unresolved git merge conflict.

git writes ``<<<<<<< ours`` / ``=======`` / ``>>>>>>> theirs`` around both sides of a conflict and
leaves them in the file until someone resolves it. bash cannot parse the first marker: it stops
there ("syntax error near unexpected token `<<<'", exit 2), so the commands below it, the launch
among them, never run. The script is not followed further (the layout stays unresolved).
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule


@rule("LAY026", needs=("plan",))
def launch_script_merge_conflict(ctx: Context) -> Iterator[Hit]:
    said: set[str] = set()
    for lx in ctx.plan.launches:
        if lx.conflict and lx.conflict not in said:
            said.add(lx.conflict)
            yield hit(
                f"`{lx.raw}` runs a script with an unresolved git merge conflict at {lx.conflict} "
                "(<<<<<<< … ======= … >>>>>>>): bash stops at its first marker with a syntax error "
                "(exit 2), and the launch never starts",
                where=lx.conflict,
            )
