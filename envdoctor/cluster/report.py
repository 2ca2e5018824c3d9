"""Rank 0's cluster report: the first node's own check, the other nodes' own findings, and the
Cluster area (differences across nodes, device layout, the all-reduce and its bandwidth).
Plain data in, ``Report`` out; no torch."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Any

from envdoctor import units
from envdoctor.cluster.compare import NodeView, compare
from envdoctor.cluster.devices import Node, group_nodes, layout_findings, role_rows
from envdoctor.cluster.interface import BenchPlan, Measurement, NodeInfo, RankInfo, RankResult
from envdoctor.findings import Finding, Severity
from envdoctor.report.interface import Area, Report

RULES = tuple(f"CLU00{i}" for i in range(1, 9))
LOW_BANDWIDTH = 0.5  # a node pair below this share of the best pair's bus bandwidth: CLU006


@dataclass
class Gathered:
    """Everything rank 0 holds at the end (parts may be missing after a failed collective)."""

    launcher: str
    world_size: int
    ranks: list[RankInfo]
    infos: list[NodeInfo | None] = field(default_factory=list)
    plan: BenchPlan | None = None
    results: list[RankResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # collectives that failed, in words


def size_text(n: int) -> str:
    """A message size in whole MiB, or KiB below one (rounded down)."""
    return units.size_text(n, "MiB", floor=True, step_down=True)


def rate_text(bps: float | None) -> str:
    return "" if bps is None else f"{bps / 1e9:.2f} GB/s"


def time_text(s: float | None) -> str:
    if s is None:
        return ""
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} µs"


def report_from_dict(data: dict[str, Any]) -> Report:
    """A JSON report (``report.json_format.to_dict``) back into a ``Report``."""
    areas = {
        a["key"]: Area(
            key=a["key"],
            title=a["title"],
            summary=a.get("summary", ""),
            ran=list(a.get("ran", [])),
            skipped=dict(a.get("skipped", {})),
            note=a.get("note", ""),
        )
        for a in data.get("areas", [])
    }
    for f in data.get("findings", []):
        area = areas.get(f.get("area", ""))
        if area is not None:
            area.findings.append(
                Finding(
                    f["rule"], Severity(f["severity"]), f["message"], f.get("fix", ""), f.get("evidence", {})
                )
            )
    return Report(
        areas=list(areas.values()),
        subject=data.get("subject", ""),
        version=data.get("envdoctor", ""),
        upgrade_plan=data.get("upgrade_plan", []),
    )


def node_checks(nodes: list[Node]) -> Report:
    """The first checked node's report; the other nodes' findings it lacks, named after their
    node. Without any checked node: an empty report."""
    checked = [n for n in nodes if n.info and n.info.check]
    if not checked:
        return Report(areas=[])
    first = checked[0]
    base = report_from_dict(first.info.check)  # type: ignore[union-attr, arg-type]
    base.areas = [a for a in base.areas if a.key != "probe"]
    areas = {a.key: a for a in base.areas}
    for a in base.areas:
        a.summary = f"{first.label}: {a.summary}" if a.summary and len(nodes) > 1 else a.summary
    seen = {(f.rule, f.message) for f in base.findings}
    for node in checked[1:]:
        other = report_from_dict(node.info.check)  # type: ignore[union-attr, arg-type]
        for area in other.areas:
            if area.key not in areas:
                continue
            for f in area.findings:
                if (f.rule, f.message) in seen:
                    continue
                seen.add((f.rule, f.message))
                areas[area.key].findings.append(
                    dataclasses.replace(
                        f, message=f"{node.label}: {f.message}", evidence={**f.evidence, "node": node.index}
                    )
                )
    return base


def aggregate(results: list[RankResult]) -> list[Measurement]:
    """One row per (group, size): the slowest member's time, any member's error."""
    rows: dict[tuple[str, int], Measurement] = {}
    for result in sorted(results, key=lambda r: r.rank):
        for m in result.measurements:
            key = (m.group, m.size)
            if key not in rows:
                rows[key] = dataclasses.replace(m)
                continue
            row = rows[key]
            if row.error:
                continue
            if m.error:
                row.error, row.seconds = m.error, None
            elif m.seconds is not None:
                row.seconds = max(row.seconds or 0.0, m.seconds)
            if m.correct is not None:
                row.correct = bool(m.correct) and row.correct is not False
    return list(rows.values())


def bandwidth_findings(rows: list[Measurement]) -> list[Finding]:
    """CLU005 for a failed or wrong all-reduce, CLU006 for a slow node pair."""
    out = []
    reported: set[str] = set()
    for m in rows:
        what = "the all-reduce across all ranks" if m.group == "all" else f"the all-reduce between {m.group}"
        if m.error and m.group not in reported and not m.error.startswith("not run"):
            reported.add(m.group)
            out.append(
                Finding(
                    "CLU005",
                    Severity.ERROR,
                    f"{what} ({m.backend}, {size_text(m.size)}) failed: {m.error}",
                    fix="rerun with NCCL_DEBUG=INFO (or TORCH_DISTRIBUTED_DEBUG=DETAIL "
                    "for gloo) to see which transport and interface it tried; check that the nodes "
                    "reach each other on MASTER_PORT and the NCCL/gloo interfaces (NCCL_SOCKET_IFNAME, "
                    "GLOO_SOCKET_IFNAME)",
                    evidence={"group": m.group, "ranks": m.ranks, "backend": m.backend},
                )
            )
        if m.correct is False and m.group not in reported:
            reported.add(m.group)
            out.append(
                Finding(
                    "CLU005",
                    Severity.ERROR,
                    f"{what} ({m.backend}) returned a wrong sum",
                    fix="a collective that computes wrong results points at the hardware or a broken "
                    "NCCL build: run nccl-tests' all_reduce_perf with -c 1 on the same nodes",
                    evidence={"group": m.group, "ranks": m.ranks},
                )
            )
    pairs = [m for m in rows if m.group != "all" and m.busbw]
    if len(pairs) >= 2:
        best = max(pairs, key=lambda m: m.busbw or 0)
        for m in pairs:
            share = (m.busbw or 0) / (best.busbw or 1)
            if share < LOW_BANDWIDTH:
                out.append(
                    Finding(
                        "CLU006",
                        Severity.WARNING,
                        f"{m.group}: {rate_text(m.busbw)} all-reduce bus bandwidth, {share:.0%} of the "
                        f"best pair ({best.group}, {rate_text(best.busbw)})",
                        fix="compare the transports NCCL picks on that pair (NCCL_DEBUG=INFO: NET/IB "
                        "vs NET/Socket): a socket fallback, a down InfiniBand port, or a different "
                        "NCCL_SOCKET_IFNAME / NCCL_IB_HCA on one of the two nodes",
                        evidence={
                            "pair": m.group,
                            "busbw_gbps": round((m.busbw or 0) / 1e9, 3),
                            "best": best.group,
                            "best_busbw_gbps": round((best.busbw or 0) / 1e9, 3),
                        },
                    )
                )
    return out


def collection_findings(nodes: list[Node]) -> list[Finding]:
    """CLU008: a node (or a rank's device) that could not be checked."""
    out = []
    for n in nodes:
        if n.info is None:
            out.append(
                Finding(
                    "CLU008",
                    Severity.ERROR,
                    f"{n.label} sent no facts: none of its ranks is local rank 0",
                    fix="launch with torchrun / accelerate launch, which number local ranks "
                    "from 0 on every node",
                    evidence={"node": n.index},
                )
            )
        elif n.info.error:
            out.append(
                Finding(
                    "CLU008",
                    Severity.ERROR,
                    f"{n.label} could not be checked: {n.info.error}",
                    fix="fix what the message names on that node and rerun; its packages, driver and "
                    "GPUs are not compared until then",
                    evidence={"node": n.index, "rank": n.info.rank},
                )
            )
        elif n.info.check_error:
            out.append(
                Finding(
                    "CLU008",
                    Severity.ERROR,
                    f"{n.label}'s own check could not run: {n.info.check_error}",
                    fix="fix what the message names on that node (a --config "
                    "path must exist on every node); its facts were still compared with the others",
                    evidence={"node": n.index, "rank": n.info.rank},
                )
            )
        for r in n.ranks:
            if r.error:
                out.append(
                    Finding(
                        "CLU008",
                        Severity.ERROR,
                        f"rank {r.rank} on {n.label} could not read its device: {r.error}",
                        fix="run `nvidia-smi` and `python -c 'import torch; "
                        "print(torch.cuda.device_count())'` on that node",
                        evidence={"rank": r.rank},
                    )
                )
    return out


def _selected(findings: list[Finding], select: list[str] | None, ignore: list[str] | None) -> list[Finding]:
    from envdoctor.checks.engine import matches
    from envdoctor.rule_docs import rule_docs

    docs = rule_docs()
    return [
        f
        for f in findings
        if (not select or matches(f.rule, docs[f.rule].name, select))
        and not (ignore and matches(f.rule, docs[f.rule].name, ignore))
    ]


def _skipped(nodes: list[Node], g: Gathered, rows: list[Measurement]) -> dict[str, str]:
    skipped = {}
    compared = [n for n in nodes if n.facts is not None]
    if len(compared) < 2:
        why = "one node: nothing to compare" if len(nodes) < 2 else "fewer than two nodes sent their facts"
        skipped.update({rid: why for rid in ("CLU001", "CLU002", "CLU003", "CLU004")})
    if not any(r.cuda_count for r in g.ranks):
        skipped["CLU007"] = "no rank sees a GPU"
    if not rows and not g.failures:
        skipped["CLU005"] = g.plan.skip if g.plan and g.plan.skip else "the benchmark did not run"
    if len([m for m in rows if m.group != "all"]) < 2:
        skipped["CLU006"] = "fewer than two node pairs: no pair to compare with"
    return skipped


def _tables(nodes: list[Node], rows: list[Measurement], plan: BenchPlan | None) -> list[dict]:
    tables = [
        {
            "title": "Cluster nodes (which rank runs on which GPU):",
            "columns": ["NODE", "HOST", "GPU", "MODEL", "FREE", "ROLE"],
            "rows": role_rows(nodes),
        }
    ]
    if rows and plan:
        tables.append(
            {
                "title": f"All-reduce ({plan.backend}, {plan.warmup} warm-up + {plan.iters} timed "
                "iterations; busbw = algbw × 2(n−1)/n):",
                "columns": ["GROUP", "RANKS", "SIZE", "TIME", "ALGBW", "BUSBW", "RESULT"],
                "rows": [
                    [
                        m.group,
                        str(len(m.ranks)),
                        size_text(m.size),
                        time_text(m.seconds),
                        rate_text(m.algbw),
                        rate_text(m.busbw),
                        "failed" if m.error else ("wrong sum" if m.correct is False else "ok"),
                    ]
                    for m in rows
                ],
            }
        )
    return tables


def _summary(nodes: list[Node], g: Gathered, rows: list[Measurement]) -> str:
    parts = [
        f"{len(nodes)} node{'s' * (len(nodes) != 1)}, {g.world_size} "
        f"rank{'s' * (g.world_size != 1)} via {g.launcher}"
    ]
    overall = [m for m in rows if m.group == "all"]
    if overall:
        ok = not any(m.error or m.correct is False for m in overall)
        done = [m for m in overall if m.busbw]
        bw = f", {rate_text(done[-1].busbw)} bus bandwidth at {size_text(done[-1].size)}" if done else ""
        parts.append(f"{overall[0].backend} all-reduce {'ok' if ok else 'FAILED'}{bw}")
    elif g.plan and g.plan.skip:
        parts.append(g.plan.skip)
    for n in nodes:
        if n.info and n.info.override:
            parts.append(f"{n.label}: facts overridden from ENVDOCTOR_FACTS_OVERRIDE={n.info.override}")
    return "; ".join(parts)


def cluster_report(g: Gathered, select: list[str] | None = None, ignore: list[str] | None = None) -> Report:
    nodes = group_nodes(g.ranks, g.infos)
    report = node_checks(nodes)
    rows = aggregate(g.results)
    findings = collection_findings(nodes)
    views = [
        NodeView(n.label, n.facts, n.info.runtime if n.info else {}) for n in nodes if n.facts is not None
    ]
    findings += compare(views)
    findings += layout_findings(nodes)
    findings += [
        Finding(
            "CLU005",
            Severity.ERROR,
            f"the cluster check's own collective failed: {why}",
            fix="a rank that does not answer within the timeout is stuck or "
            "unreachable: look at that node's stderr; raise ENVDOCTOR_CLUSTER_TIMEOUT "
            "if the nodes are merely slow",
            evidence={"failure": why},
        )
        for why in g.failures
    ]
    findings += bandwidth_findings(rows)
    skipped = _skipped(nodes, g, rows)
    area = Area(
        key="cluster",
        title="Cluster",
        summary=_summary(nodes, g, rows),
        findings=_selected(findings, select, ignore),
        ran=[r for r in RULES if r not in skipped],
        skipped=skipped,
    )
    report.areas.append(area)
    report.subject = (
        f"checking a cluster of {len(nodes)} node{'s' * (len(nodes) != 1)}, "
        f"{g.world_size} rank{'s' * (g.world_size != 1)} via {g.launcher}"
    )
    report.layout = []
    if not report.version:
        from envdoctor import __version__

        report.version = __version__
    report.extra["cluster"] = {
        "launcher": g.launcher,
        "world_size": g.world_size,
        "backend": g.plan.backend if g.plan else None,
        "backend_reason": g.plan.why if g.plan else None,
        "nodes": [
            {
                "node": n.index,
                "host": n.host,
                "ranks": [r.rank for r in n.ranks],
                "runtime": n.info.runtime if n.info else {},
                "override": n.info.override if n.info else None,
                "error": n.info.error if n.info else "no local rank 0",
                "check_error": n.info.check_error if n.info else None,
            }
            for n in nodes
        ],
        "ranks": [asdict(r) for r in g.ranks],
        "bandwidth": [
            {
                "group": m.group,
                "ranks": m.ranks,
                "backend": m.backend,
                "bytes": m.size,
                "seconds": m.seconds,
                "algbw_gbps": round(m.algbw / 1e9, 4) if m.algbw else None,
                "busbw_gbps": round(m.busbw / 1e9, 4) if m.busbw else None,
                "correct": m.correct,
                "error": m.error,
            }
            for m in rows
        ],
        "failures": g.failures,
    }
    report.extra["tables"] = _tables(nodes, rows, g.plan)
    return report
