"""``check --distributed --probe``: the probe inside the user's own multi-node job.

The job's launcher (torchrun, accelerate launch, srun) starts envdoctor on every rank. Each
node's local rank 0 then runs the probe for its node: its ranks under torchrun with the job's
shape (``--nnodes``, this node's ``--node_rank``, its ``--nproc_per_node``), every node's ranks
meeting at the job's own rendezvous host (``MASTER_ADDR``) on a port rank 0 chose, so the GRPO
step runs on every rank's own device as one world over the job's network path; the node's own
NVML watch judges its isolation. What each node saw goes to rank 0 over the job's control group
(plain data), and rank 0 reports one Probe area with a row per node.

In ``vllm_mode: server`` the node that ``vllm_server_host`` names is the server node: it runs the
probe server on its address (``probe/run/serve.py``) while the other nodes train as one torchrun
job (meeting at the first training node), generating through ``vllm_server_host`` and syncing
their weights over the group port. Rank 0 assigns the roles from what each node's local rank 0
says (``prepare`` → ``assign``). The probe contacts the job's own hosts only: its rendezvous
host, the first training node, ``vllm_server_host``.
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


#: TRL's defaults where the config names none (GRPOConfig vllm_server_port, vllm_group_port)
DEFAULT_SERVER_PORT, DEFAULT_GROUP_PORT = 8000, 51216


def _plan(options: Any, launch: str) -> Any:
    from envdoctor.plan.build import build_plan

    return build_plan(
        config=options.config, accelerate_config=options.accelerate_config, launch=launch, live=True
    )


def _server_line(options: Any, config: dict[str, Any]) -> str:
    """The server line: the user's (``--launch``), else TRL's ``trl vllm-serve`` for the model."""
    if options.launch:
        plan = _plan(options, options.launch)
        if plan.server is not None and plan.server.raw:
            return str(plan.server.raw)
    model = str(config.get("model_name_or_path") or "Qwen/Qwen2.5-0.5B-Instruct")
    return f"trl vllm-serve --model {model}"


def node_spec(job: JobEnv, options: Any, timeout_s: float) -> tuple[Any, str]:
    """This node's ``ProbeSpec``: the plan of its share (the job's config on its ranks; in server
    mode with the server line), and the config's ``vllm_server_host``; the launcher and the
    ranks are set once the roles are known."""
    from envdoctor.checks.context import Context
    from envdoctor.facts.collect import collect_facts
    from envdoctor.probe.plan.spec import spec_from_context

    share = f"torchrun --nproc_per_node {job.local_world_size} train.py"
    facts = collect_facts()
    allow = tuple(getattr(options, "allow_hosts", ()) or ())
    ctx = Context(facts=facts, plan=_plan(options, share), network=options.network, allow_hosts=allow)
    lay = ctx.layout
    host = str(lay.server.host) if lay.server else str(ctx.config.get("vllm_server_host") or "")
    spec = spec_from_context(ctx, timeout_s=timeout_s)
    if ctx.plan.use_vllm and lay.generation_mode == "server" and host and is_this_node(host):
        # the server node: its plan holds the server line (a training node's does not, so that
        # its ranks keep their own GPUs); the model is chosen as on the training nodes, so that
        # the weights they sync have the names and shapes the server loaded
        model = spec.model
        launch = f"{_server_line(options, ctx.config)}\n{share}"
        ctx = Context(facts=facts, plan=_plan(options, launch), network=options.network, allow_hosts=allow)
        spec = spec_from_context(ctx, timeout_s=timeout_s)
        spec.model = model
    spec.multi_node = None
    spec.user_server = None  # the job's server is the probe's; a running one is not read here
    return spec, host


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def is_this_node(host: str) -> bool:
    """Whether ``host`` (the config's ``vllm_server_host``) is this node: ``ENVDOCTOR_NODE_ADDR``
    when set, else an address of it this host can bind (a name is resolved first)."""
    given = os.environ.get(NODE_ADDR_ENV)
    if given:
        return host == given
    if host in ("", "0.0.0.0", "::", "localhost") or host.startswith("127."):  # noqa: S104
        return False  # names no one node of several
    if host in (socket.gethostname(), socket.getfqdn()):
        return True
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    for family, _t, _p, _c, addr in infos:
        with socket.socket(family) as s:
            try:
                s.bind((addr[0], 0))
            except OSError:
                continue
            return True
    return False


def prepare(job: JobEnv, options: Any, timeout_s: float) -> tuple[Any, dict[str, Any]]:
    """Local rank 0: this node's spec and its role, for rank 0 to assign (errors as data)."""
    role: dict[str, Any] = {
        "node": node_index(job),
        "addr": node_addr(),
        "host": socket.gethostname(),
        "port": free_port(),
        "local_world": job.local_world_size,
    }
    try:
        spec, server_host = node_spec(job, options, timeout_s)
    except Exception as exc:
        role["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        return None, role
    if spec.use_vllm and spec.vllm_mode == "server":
        role["server_host"] = server_host or "0.0.0.0"  # noqa: S104 - TRL's default, named in a note
        role["server"] = bool(server_host) and is_this_node(server_host)
        if role["server"]:
            want, group = DEFAULT_SERVER_PORT, int(spec.vllm.get("vllm_group_port") or DEFAULT_GROUP_PORT)
            role["server_port"] = want if _port_free(want) else free_port()
            role["group_port"] = group if _port_free(group) else free_port()
    return spec, role


def assign(roles: list[dict[str, Any] | None], master_addr: str, rank0_node: int) -> dict[str, Any]:
    """Rank 0: which node serves (the one ``vllm_server_host`` names), which nodes train and
    where their ranks meet (the first training node: the job's rendezvous host when it is rank
    0's node, else its address)."""
    leaders = sorted((r for r in roles if r and not r.get("error")), key=lambda r: r["node"])
    servers = [r for r in leaders if r.get("server")]
    wanted = next((r["server_host"] for r in leaders if r.get("server_host")), None)
    plan: dict[str, Any] = {"server": None, "trainers": [], "rdzv": None, "note": None}
    if len(servers) == 1:
        srv = servers[0]
        plan["server"] = {
            "node": srv["node"],
            "addr": srv["addr"],
            "host": wanted,
            "port": srv["server_port"],
            "group_port": srv["group_port"],
        }
    elif servers:
        plan["note"] = (
            f"vllm_server_host {wanted} names several nodes of the job "
            f"({', '.join(str(r['node']) for r in servers)}): the server split was not probed"
        )
    elif wanted:
        plan["note"] = (
            f"vllm_server_host {wanted} is none of the job's nodes (set ENVDOCTOR_NODE_ADDR on a "
            "node known by another address, and start envdoctor on the server node too): the "
            "server split was not probed"
        )
    trainers = [r for r in leaders if plan["server"] is None or r["node"] != plan["server"]["node"]]
    plan["trainers"] = [r["node"] for r in trainers]
    if trainers:
        first = trainers[0]
        plan["rdzv"] = (master_addr if first["node"] == rank0_node else first["addr"], first["port"])
    return plan


def _apply(spec: Any, job: JobEnv, plan: dict[str, Any]) -> None:
    """A training node's spec in the assigned job: its torchrun, its global ranks, the server."""
    host, port = plan["rdzv"]
    index = plan["trainers"].index(node_index(job))
    spec.launcher = launcher(job, host, port)
    spec.launcher[spec.launcher.index("--nnodes") + 1] = str(len(plan["trainers"]))
    spec.launcher[spec.launcher.index("--node_rank") + 1] = str(index)
    spec.job_rendezvous = f"{host}:{port}"
    base = index * job.local_world_size
    spec.rank_gpus = {base + r: g for r, g in spec.rank_gpus.items()}
    if os.environ.get(NODE_ADDR_ENV):  # where vLLM's weight-sync group finds this node
        spec.env.setdefault("VLLM_HOST_IP", os.environ[NODE_ADDR_ENV])
    if not (spec.use_vllm and spec.vllm_mode == "server"):
        return
    srv = plan["server"]
    spec.server_launch, spec.server_visible = None, []
    if srv is not None:
        spec.remote_server = (srv["host"], srv["port"], srv["group_port"])
        spec.generation_gpus = []  # the server's GPUs are another node's
        return
    spec.use_vllm, spec.vllm_mode = False, None
    spec.notes.append(
        (plan.get("note") or "the server split was not probed")
        + ": the step generated with the trainer's own generate()"
    )


def _row(job: JobEnv, spec: Any, result: Any, role: str) -> dict[str, Any]:
    findings = list(result.findings)
    findings += [
        Finding(
            "PRB016",
            Severity.WARNING,
            note,
            "set vllm_server_host to the server node's address (ENVDOCTOR_NODE_ADDR where it is "
            "known by another) and run envdoctor on the server node too (docs/cluster.md)",
        )
        for note in spec.notes
    ]
    return {
        "node": node_index(job),
        "host": socket.gethostname(),
        "addr": node_addr(),
        "role": role,
        "status": result.status,
        "phase": result.phase,
        "wall_s": result.wall_s,
        "isolation": result.isolation,
        "weight_sync": result.weight_sync,
        "generation": result.generation,
        "server": {k: v for k, v in result.server.items() if k not in ("log",)},
        "ranks": {
            r: {
                "device": d.get("device"),
                "ok": bool(d.get("ok")),
                "finished": bool(d.get("finished")),
                "step_s": d.get("step_s"),
                "world_size": d.get("world_size"),
            }
            for r, d in sorted(result.ranks.items())
        },
        "planned": sorted(spec.rank_gpus),
        "findings": findings,
        "leftover_pids": result.leftover_pids,
    }


def failed(job: JobEnv, why: str) -> dict[str, Any]:
    return {
        "node": node_index(job),
        "host": socket.gethostname(),
        "addr": node_addr(),
        "status": "error",
        "error": why[:2000],
        "findings": [],
    }


def train(job: JobEnv, spec: Any, plan: dict[str, Any]) -> dict[str, Any]:
    """A training node's probe in the assigned job (never raises)."""
    try:
        from envdoctor.probe.run.runner import run_probe

        _apply(spec, job, plan)
        return _row(job, spec, run_probe(spec), "trainer")
    except Exception as exc:
        return failed(job, f"{type(exc).__name__}: {exc}")


def serve(job: JobEnv, spec: Any, plan: dict[str, Any], until: Any) -> dict[str, Any]:
    """The server node: the probe server where the job says, until the trainers are done;
    ``until`` is called exactly once on every path (never raises)."""
    called = False

    def once() -> None:
        nonlocal called
        if not called:
            called = True
            until()

    try:
        from envdoctor.probe.run.serve import serve_probe

        srv = plan["server"]
        addr = os.environ.get(NODE_ADDR_ENV)
        result = serve_probe(spec, (srv["host"], srv["port"], srv["group_port"]), once, addr)
        row = _row(job, spec, result, "server")
        row["planned"] = []
        return row
    except Exception as exc:
        return failed(job, f"the probe server: {type(exc).__name__}: {exc}")
    finally:
        once()


def _cell(row: dict[str, Any]) -> list[str]:
    ranks = row.get("ranks") or {}
    where = ", ".join(f"{r}→{d.get('device') or '?'}" for r, d in sorted(ranks.items())) or "none"
    steps = [d["step_s"] for d in ranks.values() if d.get("step_s") is not None]
    ws = row.get("weight_sync") or {}
    sync = str(ws.get("verdict") or ("not checked" if ws else "—"))
    if row.get("role") == "server":
        srv = row.get("server") or {}
        where, sync = f"vLLM server :{srv.get('port')} (group port {srv.get('group_port')})", "—"
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
    servers = [r for r in got if r.get("role") == "server"]
    planned = sum(len(r.get("planned") or r.get("ranks") or {}) for r in got if r.get("role") != "server")
    done = sum(1 for r in got for d in (r.get("ranks") or {}).values() if d.get("ok"))
    area.summary = (
        f"{len(passed)} of {nodes} node{'s' * (nodes != 1)} passed; {done} of "
        f"{planned or world_size} training rank{'s' * ((planned or world_size) != 1)} finished the "
        "GRPO step as one job" + "".join(f"; the probe vLLM server on node {r.get('node')}" for r in servers)
    )
    area.data = {"nodes": [{k: v for k, v in r.items() if k != "findings"} for r in got]}
    table = {
        "title": "Probe per node:",
        "columns": ["NODE", "ADDRESS", "RANK→DEVICE", "STATUS", "STEP", "ISOLATION", "WEIGHT SYNC"],
        "rows": [_cell(r) for r in got],
    }
    return area, table
