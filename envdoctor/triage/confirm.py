"""The ``confirm`` vocabulary of the signatures: facts of the judged machine that back a diagnosis.

``package_below: {dist: version}``
    holds when the installed ``dist`` is older than ``version``.
``layout: dataparallel | generation_shared | no_generation_gpu``
    holds when the GPU layout resolved from ``--launch``/``--config`` shows it (judged only when
    one of them is given: without a launch line the layout is a guess).
``rules: [IDS]``
    holds when one of these envdoctor rules fires on the judged machine, config and launch line;
    its message and exact fix are carried over. A log from TRL's vLLM code paths means vLLM was in
    use, so without a config the rules run as if ``use_vllm`` were on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.findings import Finding, Severity
from envdoctor.plan.interface import GpuLayout, Plan


@dataclass
class Confirmation:
    """What the judged machine says about one diagnosis."""

    rule: str = ""  # the signature's rule: its fix comes first
    held: list[str] = field(default_factory=list)  # facts that confirm it
    against: list[str] = field(default_factory=list)  # facts checked that do not
    findings: list[Finding] = field(default_factory=list)  # rules that fired (their fixes)

    @property
    def confirmed(self) -> bool:
        return bool(self.held or self.findings)

    @property
    def fix(self) -> str:
        own = [f for f in self.findings if f.rule == self.rule] or self.findings
        return own[0].fix if own else ""

    def summary(self) -> str:
        """``confirmed here: …`` / ``not confirmed here: …`` (empty when nothing was checked)."""
        if self.confirmed:
            facts = self.held or [f"{f.rule}: {f.message}" for f in self.findings[:1]]
            where = "by the log" if all(f.startswith("the log's") for f in facts) else "here"
            return f"confirmed {where}: " + "; ".join(facts)
        return "not confirmed here: " + "; ".join(self.against) if self.against else ""


def from_log(ctx: Context | None, dist: str) -> str:
    """``line N`` where the log shows the version of ``dist`` that the facts hold, else ``""``."""
    if ctx is None:
        return ""
    found = ctx.facts.extra.get("log_versions", {}).get(dist)
    return (f"line {found[1]}" if found[1] else "the log") if found else ""


def layout_given(ctx: Context) -> bool:
    return ctx.plan.trainer is not None or bool(ctx.plan.config)


def dataparallel(lay: GpuLayout) -> bool:
    """One training process that sees several GPUs: Trainer wraps the model in nn.DataParallel."""
    return not lay.problems.get("distributed") and lay.process_gpus > 1


def training_gpus(lay: GpuLayout) -> list[int]:
    """The GPUs training memory lands on (every visible GPU under nn.DataParallel)."""
    return list(lay.visible) if dataparallel(lay) else lay.training


def shared_gpus(lay: GpuLayout) -> list[int]:
    """Generation GPUs that training also uses (colocate mode shares on purpose: not counted)."""
    if lay.generation_mode == "colocate":
        return []
    return sorted(set(lay.generation) & set(training_gpus(lay)))


def _layout(name: str, ctx: Context, out: Confirmation) -> None:
    if not layout_given(ctx):
        return
    lay = ctx.layout
    if name == "dataparallel":
        if dataparallel(lay):
            out.held.append(f"one training process sees {lay.process_gpus} GPUs ({lay.visible_source})")
        else:
            out.against.append("each training process sees one GPU")
    elif name == "generation_shared":
        shared = shared_gpus(lay)
        if shared:
            out.held.append(f"GPU {', '.join(map(str, shared))} both trains and runs vLLM")
        else:
            out.against.append("the layout keeps vLLM's GPU apart from training")
    elif name == "no_generation_gpu":
        problem = lay.problems.get("vllm_device")
        if problem:
            out.held.append(
                f"the trainer sees {problem['visible']} GPU(s), so {problem['requested']} does not exist"
            )
        elif lay.generation:
            out.against.append(f"vLLM's GPU {lay.generation[0]} is visible to the trainer")


def _rules_context(ctx: Context) -> Context:
    if ctx.plan.config_origin or ctx.plan.config.get("use_vllm") is not None:
        return ctx
    plan = Plan(
        config={**ctx.plan.config, "use_vllm": True},
        launches=ctx.plan.launches,
        accelerate=ctx.plan.accelerate,
    )
    return Context(facts=ctx.facts, plan=plan, kb=ctx.kb, network=False)


def _rules(ids: tuple[str, ...], ctx: Context, out: Confirmation) -> None:
    from envdoctor.checks.engine import run_rules

    if not layout_given(ctx):  # layout and memory rules would judge a guessed layout
        ids = tuple(i for i in ids if not i.startswith(("LAY", "MEM")))
    if not ids:
        return
    outcome = run_rules(_rules_context(ctx), select=list(ids))
    for f in outcome.findings:
        if f.severity != Severity.INFO and f.rule in ids and "failed internally" not in f.message:
            out.findings.append(f)


def confirm(spec: dict[str, Any], ctx: Context | None, rule: str = "") -> Confirmation:
    """Evaluate a signature's ``confirm`` data against the judged machine (nothing without one);
    ``rule``: the signature's rule, whose fix is preferred when several rules fire."""
    out = Confirmation(rule=rule)
    if ctx is None:
        return out
    for dist, minimum in dict(spec.get("package_below", ())).items():
        installed = ctx.version(dist)
        logged = from_log(ctx, dist)
        if installed is None:
            out.against.append(
                f"{dist} is not installed here"
                if ctx.facts.source != "log"
                else f"the log shows no {dist} version"
            )
        elif versions.below(installed, minimum):
            out.held.append(
                f"the log's {dist} {installed} ({logged}) is older than {minimum}"
                if logged
                else f"installed {dist} {installed} is older than {minimum}"
            )
        else:
            out.against.append(
                f"the log's {dist} {installed} ({logged}) is not older than {minimum}"
                if logged
                else f"{dist} {installed} here is not older than {minimum}"
            )
    if spec.get("layout"):
        _layout(spec["layout"], ctx, out)
    if spec.get("rules"):
        _rules(tuple(spec["rules"]), ctx, out)
    return out
