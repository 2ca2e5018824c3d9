"""``check --distributed --probe``: the probe inside the user's own multi-node job.

The job's launcher (torchrun, accelerate launch, srun) starts envdoctor on every rank. Each
node's local rank 0 then runs the probe for its node: its ranks under torchrun with the job's
shape (``--nnodes``, this node's ``--node_rank``, its ``--nproc_per_node``), every node's ranks
meeting at the job's own rendezvous host (``MASTER_ADDR``) on a port rank 0 chose, so the GRPO
step runs on every rank's own device as one world over the job's network path; the node's own
NVML watch judges its isolation. What each node saw goes to rank 0 over the job's control group
(plain data), and rank 0 reports one Probe area with a row per node. The probe contacts the
job's rendezvous host only, as the job itself does.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

from envdoctor.cluster.job import JobEnv
from envdoctor.findings import Finding, Severity
from envdoctor.report.interface import Area

#: the address this node is known by (a multi-homed host, or nodes emulated on one host); else
#: its hostname
NODE_ADDR_ENV = "ENVDOCTOR_NODE_ADDR"


def free_port() -> int:
    """A TCP port free on this host's every address: where the probe's ranks meet (rank 0's host,
    the job's rendezvous host)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def node_index(job: JobEnv) -> int:
    """This node's rank in the job (GROUP_RANK / NODE_RANK), else its ranks' block."""
    if job.node_rank is not None:
        return job.node_rank
    return job.rank // max(job.local_world_size, 1)


def node_count(job: JobEnv) -> int:
    return max(job.world_size // max(job.local_world_size, 1), 1)


def node_addr() -> str:
    return os.environ.get(NODE_ADDR_ENV) or socket.gethostname()


def launcher(job: JobEnv, host: str, port: int) -> list[str]:
    """torchrun (this interpreter's) with the job's shape and this node's place in it."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        str(node_count(job)),
        "--node_rank",
        str(node_index(job)),
        "--nproc_per_node",
        str(job.local_world_size),
        "--master_addr",
        host,
        "--master_port",
        str(port),
    ]


def node_spec(job: JobEnv, options: Any, host: str, port: int, timeout_s: float) -> Any:
    """This node's ``ProbeSpec``: the plan of its share (the job's config on its ranks), run as
    one node of the job's world; global ranks mapped to this node's devices."""
    from envdoctor.checks.context import Context
    from envdoctor.facts.collect import collect_facts
    from envdoctor.plan.build import build_plan
    from envdoctor.probe.plan.spec import spec_from_context

    share = f"torchrun --nproc_per_node {job.local_world_size} train.py"
    plan = build_plan(
        config=options.config, accelerate_config=options.accelerate_config, launch=share, live=True
    )
    ctx = Context(
        facts=collect_facts(),
        plan=plan,
        network=options.network,
        allow_hosts=tuple(getattr(options, "allow_hosts", ()) or ()),
    )
    spec = spec_from_context(ctx, timeout_s=timeout_s)
    base = job.rank - job.local_rank
    spec.launcher = launcher(job, host, port)
    spec.multi_node = None
    spec.job_rendezvous = f"{host}:{port}"
    spec.rank_gpus = {base + r: g for r, g in spec.rank_gpus.items()}
    if spec.use_vllm and spec.vllm_mode == "server":
        spec.use_vllm, spec.vllm_mode, spec.server_launch, spec.user_server = False, None, None, None
        spec.notes.append(
            "vllm_mode server inside a multi-node job is not probed yet: the step generated "
            "with the trainer's own generate()"
        )
    return spec


def run_node(job: JobEnv, options: Any, host: str, port: int, timeout_s: float) -> dict[str, Any]:
    """Local rank 0: this node's probe, summarised as plain data for rank 0 (never raises)."""
    row: dict[str, Any] = {"node": node_index(job), "host": socket.gethostname(), "addr": node_addr()}
    try:
        from envdoctor.probe.run.runner import run_probe

        spec = node_spec(job, options, host, port, timeout_s)
        result = run_probe(spec)
    except Exception as exc:  # reported by rank 0 as this node's failure
        row.update(status="error", error=f"{type(exc).__name__}: {exc}"[:2000], findings=[])
        return row
    findings = list(result.findings)
    if spec.notes:
        findings += [
            Finding(
                "PRB016",
                Severity.WARNING,
                note,
                "probe the server split on one node (envdoctor check --probe with the server "
                "line) until the job probe covers it (docs/cluster.md)",
            )
            for note in spec.notes
        ]
    row.update(
        status=result.status,
        phase=result.phase,
        wall_s=result.wall_s,
        isolation=result.isolation,
        weight_sync=result.weight_sync,
        generation=result.generation,
        ranks={
            r: {
                "device": d.get("device"),
                "ok": bool(d.get("ok")),
                "finished": bool(d.get("finished")),
                "step_s": d.get("step_s"),
                "world_size": d.get("world_size"),
            }
            for r, d in sorted(result.ranks.items())
        },
        planned=sorted(spec.rank_gpus)
        or [job.rank - job.local_rank + i for i in range(job.local_world_size)],
        findings=findings,
        leftover_pids=result.leftover_pids,
    )
    return row


def _cell(row: dict[str, Any]) -> list[str]:
    ranks = row.get("ranks") or {}
    where = ", ".join(f"{r}→{d.get('device') or '?'}" for r, d in sorted(ranks.items())) or "none"
    steps = [d["step_s"] for d in ranks.values() if d.get("step_s") is not None]
    ws = row.get("weight_sync") or {}
    sync = str(ws.get("verdict") or ("not checked" if ws else "—"))
    return [
        f"node {row.get('node')}",
        str(row.get("addr") or row.get("host") or "?"),
        where,
        str(row.get("status")),
        f"{max(steps):.2f} s" if steps else "—",
        str(row.get("isolation") or "—"),
        sync,
    ]


def probe_area(rows: list[dict[str, Any] | None], nodes: int, world_size: int) -> tuple[Area, dict[str, Any]]:
    """Rank 0: one Probe area for the whole job (each node's findings named after it) and the
    table with a row per node."""
    got = sorted((r for r in rows if r), key=lambda r: r.get("node", 0))
    area = Area(key="probe", title="Probe", ran=["probe"])
    seen = {r.get("node") for r in got}
    for index in range(nodes):
        if index not in seen:
            area.findings.append(
                Finding(
                    "PRB001",
                    Severity.ERROR,
                    f"node {index}: no result of its probe reached rank 0 (no local rank 0 there?)",
                    "look at that node's stderr",
                    {"node": index},
                )
            )
    for row in got:
        label = f"node {row.get('node')} ({row.get('addr') or row.get('host')})"
        if row.get("error"):
            area.findings.append(
                Finding(
                    "PRB001",
                    Severity.ERROR,
                    f"{label}: the probe could not run: {row['error']}",
                    "look at that node's stderr; the error names the cause",
                    {"node": row.get("node")},
                )
            )
        for f in row.get("findings") or []:
            evidence = {**f.evidence, "node": row.get("node")}
            area.findings.append(Finding(f.rule, f.severity, f"{label}: {f.message}", f.fix, evidence))
    passed = [r for r in got if r.get("status") == "pass"]
    ranks = sum(len(r.get("ranks") or {}) for r in got)
    area.summary = (
        f"{len(passed)} of {nodes} node{'s' * (nodes != 1)} passed; {ranks} of {world_size} "
        f"rank{'s' * (world_size != 1)} ran the GRPO step as one job"
    )
    area.data = {"nodes": [{k: v for k, v in r.items() if k != "findings"} for r in got]}
    table = {
        "title": "Probe per node:",
        "columns": ["NODE", "ADDRESS", "RANK→DEVICE", "STATUS", "STEP", "ISOLATION", "WEIGHT SYNC"],
        "rows": [_cell(r) for r in got],
    }
    return area, table
