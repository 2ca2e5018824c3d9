"""``envdoctor check --distributed`` on one rank: join the job, collect, gather to rank 0, time
the all-reduce, print one report on rank 0, and leave with the exit code every rank shares.

Ordering that matters: local rank 0 reads its node's NVML facts before any rank creates a CUDA
context (so the job's own processes are not "other processes on the GPU"); every collection has
a deadline shorter than the control group's timeout (a stuck collection is reported, not waited
for); and every failure of a collective ends each rank with exit 1 instead of a hang.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from envdoctor.cluster import gather
from envdoctor.cluster.interface import BenchPlan, RankResult
from envdoctor.cluster.job import JobEnv, job_env
from envdoctor.cluster.report import Gathered, cluster_report
from envdoctor.errors import InputError

TIMEOUT_ENV = "ENVDOCTOR_CLUSTER_TIMEOUT"
DEFAULT_TIMEOUT_S = 60.0


@dataclass
class ClusterOptions:
    """``envdoctor check`` options that apply to the cluster check."""

    config: str | None = None
    accelerate_config: str | None = None
    launch: str | None = None
    select: list[str] | None = None
    ignore: list[str] | None = None
    fmt: str = "text"
    output: str | None = None
    verbose: bool = False
    strict: bool = False
    network: bool = True
    color: bool = False
    allow_hosts: tuple[str, ...] = ()
    probe: bool = False  # --probe: every node runs the probe's GRPO step as one job
    probe_timeout: float = 180.0


def timeout_s() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "")
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value < 2:
        raise InputError(TIMEOUT_ENV, f"expected seconds (at least 2), got {raw!r}")
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _decide(g: Gathered, timeout: float) -> BenchPlan:
    from envdoctor.cluster.bandwidth import make_plan
    from envdoctor.cluster.devices import group_nodes

    nodes = group_nodes(g.ranks, g.infos)
    leaders = [(n.info.rank if n.info else min(r.rank for r in n.ranks), n.label) for n in nodes]
    uuids = [r.gpu_uuid for r in g.ranks if r.gpu_uuid]
    return make_plan(g.ranks, leaders, timeout / 2, unique_gpus=len(uuids) == len(set(uuids)))


def _emit(g: Gathered, opts: ClusterOptions, probes: list | None = None) -> int:
    """Rank 0: print the report; its exit code (2 when the report cannot be written)."""
    from envdoctor.output import emit
    from envdoctor.report import render

    report = cluster_report(g, select=opts.select, ignore=opts.ignore)
    if opts.probe:
        from envdoctor.cluster.job_probe import probe_area

        nodes = len({r.node_rank if r.node_rank is not None else r.host for r in g.ranks}) or 1
        area, table = probe_area(probes or [], nodes, g.world_size)
        report.areas.append(area)
        report.extra.setdefault("tables", []).append(table)
    try:
        emit(render(report, opts.fmt, verbose=opts.verbose, color=opts.color), opts.output)
    except InputError as exc:
        print(f"envdoctor: error: {exc}", file=sys.stderr)
        return 2
    return report.exit_code(strict=opts.strict)


def _job(job: JobEnv, opts: ClusterOptions, timeout: float) -> int:
    import torch.distributed as dist

    deadline = timeout / 2
    g = Gathered(launcher=job.launcher, world_size=job.world_size, ranks=[])
    probes: list | None = None
    step = "gathering every rank's facts"
    try:
        node = gather.node_info(job, opts, deadline) if job.leader else None
        dist.barrier()  # NVML facts read before the ranks below create CUDA contexts
        if opts.probe:  # before any rank of envdoctor's holds a GPU: the probe's watch sees the job
            step = "the probe"
            probes = _probe(job, opts)
            step = "gathering every rank's facts"
        info = gather.rank_info(job, deadline)
        parts = gather.gather((info, node))
        plan = None
        if parts is not None:
            g.ranks = [p[0] for p in parts]
            g.infos = [p[1] for p in parts]
            plan = _decide(g, timeout)
        step = "sharing the benchmark plan"
        g.plan = plan = gather.broadcast(plan)
        step = "the all-reduce benchmark"
        from envdoctor.cluster import bandwidth

        try:
            mine = bandwidth.run(plan, info)
        except Exception as exc:  # reported by rank 0; the next collective decides the rest
            mine = RankResult(rank=job.rank, error=_first_line(exc))
        step = "gathering the benchmark results"
        results = gather.gather(mine)
        if results is not None:
            g.results = results
            g.failures += [f"rank {r.rank}: the benchmark failed: {r.error}" for r in results if r.error]
    except Exception as exc:  # a collective failed or timed out: stop now, on every rank
        from envdoctor.redact import clean

        why = clean(f"{step}: {_first_line(exc)}")
        if job.rank != 0:
            print(
                f"envdoctor: rank {job.rank}: the cluster check stopped ({why}); rank 0 has the report",
                file=sys.stderr,
            )
            return 1
        g.failures.append(why)
        return max(_emit(g, opts, probes), 1)
    code = _emit(g, opts, probes) if job.rank == 0 else 0
    try:
        return int(gather.broadcast(code))
    except Exception as exc:
        from envdoctor.redact import clean

        print(
            f"envdoctor: rank {job.rank}: could not share the exit code: {clean(_first_line(exc))}",
            file=sys.stderr,
        )
        return 1


def _probe(job: JobEnv, opts: ClusterOptions) -> list | None:
    """Every node's probe as one job; rank 0 gets the rows. Local rank 0 of each node prepares
    its spec and says its role (the server node is the one ``vllm_server_host`` names); rank 0
    assigns the roles and where the training ranks meet; the server node holds the probe server
    while the training nodes run their probe (the first gather), then reports (the second)."""
    from envdoctor.cluster import job_probe

    spec, role = job_probe.prepare(job, opts, opts.probe_timeout) if job.leader else (None, None)
    roles = gather.gather(role)
    plan = None
    if job.rank == 0:
        rank0 = role["node"] if role else job_probe.node_index(job)
        plan = job_probe.assign(roles or [], os.environ.get("MASTER_ADDR", "127.0.0.1"), rank0)
    plan = gather.broadcast(plan)
    me = job_probe.node_index(job)
    box: dict = {}

    def trainers_done() -> None:
        box["rows"] = gather.gather(None)

    server_row = None
    if job.leader and spec is not None and plan["server"] and plan["server"]["node"] == me:
        server_row = job_probe.serve(job, spec, plan, trainers_done)
    else:
        row = None
        if job.leader:
            why = str((role or {}).get("error") or "no spec")
            row = job_probe.train(job, spec, plan) if spec is not None else job_probe.failed(job, why)
        box["rows"] = gather.gather(row)
    last = gather.gather(server_row)
    if job.rank != 0:
        return None
    return [r for r in (box.get("rows") or []) + (last or []) if r is not None]


def run(opts: ClusterOptions) -> int:
    """This rank's cluster check; the returned exit code is the same on every rank."""
    job = job_env()
    timeout = timeout_s()
    try:
        import torch.distributed as dist
    except ImportError:
        raise InputError("--distributed", "needs torch (pip install torch)") from None
    if not dist.is_available():
        raise InputError("--distributed", "this torch build has no torch.distributed")
    try:
        # the control group waits for the slowest node's probe: its limit, plus staging
        gather.init(timeout + (opts.probe_timeout + 120 if opts.probe else 0))
    except Exception as exc:
        raise InputError(
            "--distributed",
            f"could not join the job at {job.master} within {timeout:g} s: {_first_line(exc)}",
        ) from None
    try:
        code = _job(job, opts, timeout)
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            pass
    if gather.stuck:  # a collection thread still blocked: do not wait for it at exit
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
