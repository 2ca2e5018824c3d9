"""``envdoctor diff A.json B.json [C.json …]``: what differs between nodes' snapshots that breaks
training ("works on node A, fails on node B"; a whole cluster's snapshots), with the cluster
check's comparison. The first snapshot is the reference, or the majority with ``--majority``."""

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


def tag(i: int) -> str:
    """The i-th snapshot's tag: A … Z, then #27, #28 …"""
    return chr(ord("A") + i) if i < 26 else f"#{i + 1}"


def _label(tag: str, facts) -> str:
    from pathlib import Path

    return f"{tag} ({facts.hostname or Path(facts.source).name})"


def _side_by_side(nodes: list) -> dict:
    """The facts that decide a run, node next to node, differences marked."""
    from envdoctor.cluster.compare import NodeView, gpu_summary, torch_cuda

    def gpus(f) -> str:
        return gpu_summary(NodeView("", f)) or ""

    rows = [
        ("python", [n.facts.python for n in nodes]),
        ("driver", [n.facts.driver.version or "—" for n in nodes]),
        ("driver CUDA", [n.facts.driver.cuda or "—" for n in nodes]),
        ("torch CUDA runtime", [torch_cuda(n) or "—" for n in nodes]),
        ("GPUs", [gpus(n.facts) for n in nodes]),
    ]
    rows += [
        (name, [n.facts.version(name) or "—" for n in nodes])
        for name in SHOWN
        if any(n.facts.version(name) for n in nodes)
    ]
    return {
        "title": "Side by side:",
        "columns": ["", *(n.label for n in nodes), ""],
        "rows": [[k, *vals, "≠" if len(set(vals)) > 1 else ""] for k, vals in rows],
    }


def _different(table: dict) -> dict:
    """Only the rows that differ: a cluster's table of every row would be mostly equal."""
    return {**table, "rows": [r for r in table["rows"] if r[-1]]}


MAX_SNAPSHOTS = 4096  # a cluster's nodes; more is not a cluster but a mistake


@click.command()
@click.argument("snapshots", metavar="A.json B.json [C.json …]", nargs=-1, required=True)
@click.option(
    "--majority",
    is_flag=True,
    help="Take the value most nodes have as the reference (default: the first snapshot's).",
)
@format_option
@output_option
@verbose_option
@strict_option
def diff(snapshots, majority, fmt, output, verbose, strict) -> None:
    """Compare nodes' snapshots (`envdoctor collect -o node.json` on each node).

    The first snapshot (A) is the reference, the node that works: fixes name what to change on
    the others; with --majority the reference is what most nodes have. Exit 1 when a difference
    breaks training, 2 when a snapshot cannot be read.
    """
    from envdoctor import __version__
    from envdoctor.cluster.compare import NodeView, compare
    from envdoctor.errors import InputError
    from envdoctor.facts.snapshot import load
    from envdoctor.report import render
    from envdoctor.report.interface import Area, Report

    if not 2 <= len(snapshots) <= MAX_SNAPSHOTS:
        raise InputError("SNAPSHOTS", f"needs 2 to {MAX_SNAPSHOTS} snapshots, got {len(snapshots)}")
    nodes = []
    for i, path in enumerate(snapshots):
        facts = load(path)
        nodes.append(NodeView(_label(tag(i), facts), facts))
    found = compare(nodes, reference=None if majority else nodes[0])
    breaking = sum(1 for f in found if f.severity.value == "error")
    summary = (
        f"{breaking} breaking difference{'s' * (breaking != 1)}"
        if breaking
        else "nothing that breaks training"
    )
    area = Area(key="cluster", title="Differences", summary=summary, findings=found, ran=list(RULES))
    from envdoctor.doctor import repo_relative

    if len(nodes) == 2:
        subject = f"comparing {snapshots[0]} (A) with {snapshots[1]} (B)"
    else:
        ref = "the majority" if majority else f"A, {snapshots[0]}"
        subject = f"comparing {len(nodes)} snapshots (reference: {ref})"
    report = Report(
        areas=[area],
        subject=subject,
        version=__version__,
        artifact=repo_relative(snapshots[0]),
    )
    table = _side_by_side(nodes)
    report.extra["tables"] = [table if len(nodes) <= 3 or verbose else _different(table)]
    emit(render(report, fmt, verbose=verbose, color=fmt == "text" and not output and use_color()), output)
    sys.exit(report.exit_code(strict=bool(strict)))
