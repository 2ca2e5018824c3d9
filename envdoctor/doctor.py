"""Facts + plan → rules → report: the one pipeline behind ``check``, the hook and ``preflight``."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from envdoctor.checks.context import Context
from envdoctor.checks.engine import Outcome, run_rules
from envdoctor.facts.interface import Facts
from envdoctor.findings import Finding, Severity
from envdoctor.plan.interface import GpuLayout, Plan
from envdoctor.plan.layout import trainer_env
from envdoctor.redact import plan_secrets, redact_report
from envdoctor.report.interface import Area, Report
from envdoctor.rule_docs import AREAS, rule_docs
from envdoctor.units import size_text

if TYPE_CHECKING:
    from envdoctor.suppression import Suppression

SHOWN = ("trl", "vllm", "transformers", "accelerate", "torch", "deepspeed", "peft")
AREA_ORDER = ("packages", "config", "gpus", "layout", "allocator", "data", "probe")


def _version() -> str:
    from envdoctor import __version__

    return __version__


def _summaries(ctx: Context) -> dict[str, str]:
    f, plan = ctx.facts, ctx.plan
    pkgs = ", ".join(
        f"{n} {f.version(n) or ('?' if f.unknown(n) else '—')}"
        for n in SHOWN
        if f.version(n) or n in ("trl", "vllm", "torch")
    )
    out = {"packages": pkgs}
    if plan.config_origin:
        origins = sorted({o.split(", ")[0] for o in plan.config_origin.values()})  # GRPOConfig(...) once
        keys = [f"{k}={plan.config[k]}" for k in ("use_vllm", "vllm_mode", "vllm_device") if k in plan.config]
        out["config"] = "; ".join([" + ".join(origins)] + keys)
    if f.gpus:
        names: dict[str, int] = {}
        for g in f.gpus:
            names[g.name] = names.get(g.name, 0) + 1
        kinds = ", ".join(f"{n} × {name}" for name, n in names.items())
        out["gpus"] = f"{kinds}; driver {f.driver.version} (CUDA {f.driver.cuda})"
    else:
        out["gpus"] = f"none: {f.nvml_error or 'NVML lists no GPU'}"
    if f.gpus and (plan.trainer or plan.config) and not ctx.resolved.unresolved:
        out["layout"] = _layout_summary(ctx.layout)
        job = plan.job  # a job launcher of the repository starts the bare python line
        if job is not None and job.per_node and not job.unknown:
            out["layout"] = f"{job.kind} ({job.source}: {job.describe()}); {out['layout']}"
    env = trainer_env(f, plan.trainer)
    conf = [f"{k}={env[k]}" for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF") if k in env]
    out["allocator"] = ", ".join(conf) or "torch defaults"
    sample = getattr(ctx.__dict__.get("_data_view"), "sample", None)  # what the DAT rules read
    if sample is not None:
        read = sample.not_read or f"{len(sample.rows)} rows read from {sample.source}"
        out["data"] = f"dataset {sample.name} ({sample.split}): {read}"
    return out


def _layout_summary(lay: GpuLayout) -> str:
    ranks = ", ".join(f"rank {r.rank}→GPU {r.gpu}" for r in lay.ranks if r.gpu is not None)
    gen = ""
    if lay.generation_mode:
        where = f"GPU {','.join(map(str, lay.generation))}" if lay.generation else "GPU ?"
        if (
            not lay.generation
            and lay.server is not None
            and lay.server.source not in ("launch", "nvml", "config")
        ):
            where = f"a node {lay.server.source} picks"  # not this node's GPUs
        gen = f"; vLLM ({lay.generation_mode}) on {where}"
    elif lay.generation_unknown:
        gen = f"; vLLM: not known ({lay.generation_unknown})"
    return f"{lay.launcher}, {ranks or 'no GPU'}{gen}"


def layout_rows(ctx: Context) -> list[dict[str, Any]]:
    lay = ctx.resolved
    rows = []
    for g in ctx.facts.gpus:
        role = lay.role(g.index)
        if not role:
            others = [p for p in g.processes]
            role = ("other: " + ", ".join(f"pid {p.pid}" for p in others[:3])) if others else "idle"
        free = g.free_mib
        rows.append({"gpu": g.index, "model": g.name, "free": size_text(free, of="MiB"), "role": role})
    return rows


#: the rules whose fixes the upgrade plan is: packages, known failures, the declared stack
_PACKAGE_RULES = ("PKG", "KNF", "DCL")


def upgrade_plan(ctx: Context, findings: list[Finding]) -> list[str]:
    """The one pip line that makes the stack consistent (``envdoctor.checks.resolver``: every
    constraint envdoctor knows, nearest to what is installed), or why nothing does; nothing where
    no package finding at warning or error asks for a change (a pair no rule of this run judges,
    TRL's vLLM range with use_vllm off, is no reason to move torch under a run that works)."""
    if not any(f.severity is not Severity.INFO and f.rule.startswith(_PACKAGE_RULES) for f in findings):
        return []
    from envdoctor.checks.resolver import plan_packages  # loaded only for a stack to fix

    plan = plan_packages(ctx)
    if plan.unfixable:
        return [f"# no set of versions envdoctor knows makes this stack consistent: {plan.unfixable}"]
    from envdoctor.remedy.platform import accelerator_build, pip_lines

    # on ROCm / XPU / Ascend the packages PyPI builds for CUDA are named for the platform's builds
    return pip_lines(plan.changes, accelerator_build(ctx.facts), quote=True)


def build_report(
    ctx: Context, outcome: Outcome, extra_areas: list[Area] | None = None, subject: str | None = None
) -> Report:
    docs = rule_docs()
    summaries = _summaries(ctx)
    areas = {key: Area(key=key, title=AREAS[key], summary=summaries.get(key, "")) for key in AREA_ORDER}
    for finding in outcome.findings:
        areas[docs[finding.rule].area].findings.append(finding)
    for rule_id in outcome.ran:
        areas[docs[rule_id].area].ran.append(rule_id)
    for rule_id, why in outcome.skipped.items():
        areas[docs[rule_id].area].skipped[rule_id] = why
    script = ctx.plan.script
    unread = ""
    problem = script.problem if script is not None else None
    # a script that is there but could not be read is said; one that is not here (checked on
    # another machine than the run's) is not news
    if script is not None and problem and "is not here" not in problem and problem != "no such file":
        what = problem if problem.startswith(script.path) else f"{script.path} {problem}"
        unread = f"; the training script {what}: its GRPOConfig(...) and options were not read"
    if not ctx.plan.config_origin:
        areas["config"].note = (
            f"{ctx.plan.config_path} sets no key: TRL's defaults apply"
            if ctx.plan.config_path
            else "no GRPO config given (--config FILE)"
        ) + unread
    framework = ctx.plan.framework
    own_layout = False  # another framework places its own processes (plan.framework)
    if framework is not None:
        from envdoctor.plan.framework import leaves_out

        own_layout = leaves_out(framework, "trl-layout")
    if not ctx.plan.trainer and not ctx.plan.config:
        areas["layout"].note = "no launch command given (envdoctor check -- <launch line>)"
    elif framework is not None and own_layout:
        # ENV002 says it: the framework places its own processes, so TRL's layout is not judged,
        # resolved or not
        areas["layout"].note = f"TRL's process layout not judged: {framework.name} trains this run (ENV002)"
    elif ctx.plan.trainer and ctx.resolved.unresolved:
        areas["layout"].note = (
            f"launch not resolved: {ctx.resolved.unresolved}; the rules "
            "that need it were skipped (-v lists them)"
        )
    elif not ctx.facts.gpus:
        areas["layout"].note = "not resolved without GPU facts (see GPUs)"
    if not ctx.facts.gpus:  # no GPU is not "checked and fine": GPU001 says why
        areas["gpus"].note = "not checked"
    if getattr(ctx.__dict__.get("_data_view"), "sample", None) is None:
        areas["data"].note = "no dataset named (dataset_name, or a literal load_dataset(...) in the script)"
    areas["probe"].note = "not run (add --probe)"
    result = [a for a in areas.values() if a.key != "probe"]
    result += extra_areas or [areas["probe"]]
    if subject is None:
        subject = (
            ("checking this machine" + (f" ({ctx.facts.hostname})" if ctx.facts.hostname else ""))
            if ctx.facts.live
            else f"checking snapshot {ctx.facts.source}"
        )
    report = Report(areas=result, subject=subject, version=_version(), artifact=artifact(ctx))
    if ctx.facts.gpus:
        report.layout = layout_rows(ctx)
        report.layout_summary = summaries.get("layout", "")
    report.upgrade_plan = upgrade_plan(ctx, outcome.findings)
    redact_report(report, plan_secrets(ctx.plan))
    if outcome.suppressed:
        from envdoctor.redact import KEPT, scrub
        from envdoctor.suppression import Suppressed

        report.suppressed = [
            scrub(Suppressed(f, s, docs[f.rule].area), report.secrets, escape=False, limit=KEPT)
            for f, s in outcome.suppressed
        ]
    return report


def artifact(ctx: Context) -> str:
    """The file a finding without one of its own is about (SARIF needs one for each result):
    the GRPO config, else the accelerate config, the snapshot checked, the launched script;
    repository-relative when inside the working directory."""
    trainer = ctx.plan.trainer
    for path in (
        ctx.plan.config_path,
        ctx.plan.accelerate_path,
        None if ctx.facts.live else ctx.facts.source,
        trainer.script if trainer else None,
    ):
        if path and path != "-":
            return repo_relative(path)
    return ""


def repo_relative(path: str) -> str:
    """``path`` relative to the working directory when it lies inside it, else as given."""
    import os

    try:
        rel = os.path.relpath(os.path.abspath(path))
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def check(
    facts: Facts,
    plan: Plan,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    network: bool = True,
    allow_hosts: tuple[str, ...] = (),
    suppress: list[Suppression] | None = None,
) -> tuple[Context, Report]:
    ctx = Context(facts=facts, plan=plan, network=network, allow_hosts=tuple(allow_hosts))
    outcome = run_rules(ctx, select=select, ignore=ignore, suppress=suppress)
    prove_fixes(ctx, outcome, select, ignore)
    return ctx, build_report(ctx, outcome)


def prove_fixes(
    ctx: Context, outcome: Outcome, select: list[str] | None = None, ignore: list[str] | None = None
) -> None:
    """Keep only the fixes that hold (``envdoctor.remedy``): each remedy is applied to a copy
    of the inputs and the rules run again, in-process. Loaded only when a finding has one."""
    if not any(f.remedy is not None for f in outcome.findings):
        return
    from envdoctor.remedy import Rerun, prove

    outcome.findings = prove(ctx.facts, ctx.plan, outcome.findings, Rerun(select, ignore))


#: evidence keys that name what a data finding is about: a static finding and the probe's of the
#: same rule are one fault when these agree
_SUBJECT_KEYS = ("function", "dataset")


def with_probe(report: Report, area: Area) -> None:
    """Put the probe's area in ``report`` (in place of "not run"); a fault the static check
    already said (DAT007 on the same reward function, DAT010 …) and the probe's step met too is
    one finding: the static one, with the probe's message and evidence added."""
    static = [(a, i, f) for a in report.areas if a.key != "probe" for i, f in enumerate(a.findings)]
    kept: list[Finding] = []
    for found in area.findings:
        twin = next(
            (
                (a, i, f)
                for a, i, f in static
                if f.rule == found.rule
                and f.rule.startswith("DAT")
                and all(f.evidence.get(k) == found.evidence.get(k) for k in _SUBJECT_KEYS)
            ),
            None,
        )
        if twin is None:
            kept.append(found)
            continue
        where, i, first = twin
        where.findings[i] = replace(
            first,
            severity=max(first.severity, found.severity, key=lambda s: s.rank),
            message=f"{first.message}; the probe's step met it too: {found.message}",
            evidence={**first.evidence, "probe": found.evidence},
        )
    area.findings = kept
    report.areas[-1] = area
