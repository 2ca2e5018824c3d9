"""``envdoctor diff A.json B.json``: what differs between two nodes' snapshots that breaks
training ("works on node A, fails on node B"), with the cluster check's comparison."""

from __future__ import annotations

import sys

import click

from envdoctor.commands.options import (
    emit,
    format_option,
    output_option,
    strict_option,
    use_color,
    verbose_option,
)

RULES = ("CLU001", "CLU002", "CLU003", "CLU004")
SHOWN = ("trl", "transformers", "vllm", "accelerate", "torch", "deepspeed", "peft")


def _label(tag: str, facts) -> str:
    from pathlib import Path

    return f"{tag} ({facts.hostname or Path(facts.source).name})"


def _side_by_side(a, b) -> dict:
    """The facts that decide a run, A next to B, differences marked."""
    from envdoctor.cluster.compare import NodeView, gpu_summary, torch_cuda

    def gpus(f) -> str:
        return gpu_summary(NodeView("", f)) or ""

    rows = [
        ("python", a.facts.python, b.facts.python),
        ("driver", a.facts.driver.version or "—", b.facts.driver.version or "—"),
        ("driver CUDA", a.facts.driver.cuda or "—", b.facts.driver.cuda or "—"),
        ("torch CUDA runtime", torch_cuda(a) or "—", torch_cuda(b) or "—"),
        ("GPUs", gpus(a.facts), gpus(b.facts)),
    ]
    rows += [
        (name, a.facts.version(name) or "—", b.facts.version(name) or "—")
        for name in SHOWN
        if a.facts.version(name) or b.facts.version(name)
    ]
    return {
        "title": "Side by side:",
        "columns": ["", a.label, b.label, ""],
        "rows": [[k, va, vb, "≠" if va != vb else ""] for k, va, vb in rows],
    }


@click.command()
@click.argument("snapshot_a", metavar="A.json")
@click.argument("snapshot_b", metavar="B.json")
@format_option
@output_option
@verbose_option
@strict_option
def diff(snapshot_a, snapshot_b, fmt, output, verbose, strict) -> None:
    """Compare two snapshots (`envdoctor collect -o node.json` on each node).

    A is the reference, the node that works: fixes name what to change on B. Exit 1 when a
    difference breaks training, 2 when a snapshot cannot be read.
    """
    from envdoctor import __version__
    from envdoctor.cluster.compare import NodeView, compare
    from envdoctor.facts.snapshot import load
    from envdoctor.report import render
    from envdoctor.report.interface import Area, Report

    fa, fb = load(snapshot_a), load(snapshot_b)
    a, b = NodeView(_label("A", fa), fa), NodeView(_label("B", fb), fb)
    found = compare([a, b])
    breaking = sum(1 for f in found if f.severity.value == "error")
    summary = (
        f"{breaking} breaking difference{'s' * (breaking != 1)}"
        if breaking
        else "nothing that breaks training"
    )
    area = Area(key="cluster", title="Differences", summary=summary, findings=found, ran=list(RULES))
    from envdoctor.doctor import repo_relative

    report = Report(
        areas=[area],
        subject=f"comparing {snapshot_a} (A) with {snapshot_b} (B)",
        version=__version__,
        artifact=repo_relative(snapshot_a),
    )
    report.extra["tables"] = [_side_by_side(a, b)]
    emit(render(report, fmt, verbose=verbose, color=fmt == "text" and not output and use_color()), output)
    sys.exit(report.exit_code(strict=bool(strict)))
