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
