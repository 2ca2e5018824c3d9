"""`envdoctor check --distributed --probe`: two nodes emulated on this host (two torchrun agents,
node 0 at 127.0.0.1, node 1 at 127.0.0.2), on CPU (gloo, the CPU probe): every rank runs the
probe's GRPO step as one job over the job's rendezvous host, and rank 0 prints one report with
a row per node."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from tests.cluster.helpers import JOB_TIMEOUT, free_port, job_env, torchrun
from tests.schema_check import errors

pytestmark = [pytest.mark.distributed, pytest.mark.probe]
pytest.importorskip("trl")


def _node(rank: int, port: int, addr: str, *check_args: str) -> list[str]:
    return torchrun(
        "--nnodes",
        "2",
        "--node_rank",
        str(rank),
        "--nproc_per_node",
        "1",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(port),
        "--local_addr",
        addr,
        "-m",
        "envdoctor",
        "check",
        "--distributed",
        "--probe",
        "--probe-timeout",
        "150",
        "--no-network",
        *check_args,
    )


def _run(tmp_path, *check_args: str) -> list[tuple[int, str, str]]:
    """Both nodes at once (node 1 at 127.0.0.2); both must end in time (no rank left waiting)."""
    port = free_port()
    procs = []
    for rank, addr in ((0, "127.0.0.1"), (1, "127.0.0.2")):
        env = job_env(ENVDOCTOR_NODE_ADDR=addr, TMPDIR=str(tmp_path))
        procs.append(
            subprocess.Popen(
                _node(rank, port, addr, *check_args),
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        )
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=JOB_TIMEOUT + 60))
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs, strict=True)]


def test_two_nodes_probe_as_one_job_and_rank_0_reports_a_row_per_node(tmp_path):
    (c0, out0, err0), (c1, out1, err1) = _run(tmp_path, "--format", "json")
    assert out1 == "", out1  # only rank 0 reports
    assert c0 == c1, err0[-3000:] + err1[-3000:]  # every rank leaves with the same exit code
    report = json.loads(out0)
    assert not errors(report, "report")  # the shipped JSON Schema holds
    probe = report["probe"]
    nodes = {n["node"]: n for n in probe["nodes"]}
    assert sorted(nodes) == [0, 1], probe
    assert {n["addr"] for n in nodes.values()} == {"127.0.0.1", "127.0.0.2"}
    for index, node in nodes.items():
        assert node["status"] == "pass", node
        (rank,) = node["ranks"]  # the node's own rank: global rank = its node rank here
        assert int(rank) == index
        step = node["ranks"][rank]
        # one world over both nodes: each rank saw two ranks and trained a step on its device
        assert step["ok"] and step["device"] == "cpu" and step["world_size"] == 2, node
    area = next(a for a in report["areas"] if a["key"] == "probe")
    assert area["summary"].startswith("2 of 2 nodes passed; 2 of 2 training ranks finished")
    table = next(t for t in report["extra"]["tables"] if t["title"] == "Probe per node:")
    assert [row[:4] for row in table["rows"]] == [
        ["node 0", "127.0.0.1", "0→cpu", "pass"],
        ["node 1", "127.0.0.2", "1→cpu", "pass"],
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("envdoctor-probe-")]  # temp dirs gone


def test_the_report_names_each_nodes_failure_and_a_node_that_never_answered():
    """Plain data: node 1's probe could not start, node 2 sent nothing; node 0's finding is
    named after its node."""
    from envdoctor.cluster.job_probe import probe_area
    from envdoctor.findings import Finding, Severity

    rows = [
        {
            "node": 0,
            "addr": "10.0.0.1",
            "status": "fail",
            "ranks": {0: {"device": "cuda:0", "ok": False, "step_s": None}},
            "findings": [Finding("PRB001", Severity.ERROR, "rank 0: boom", "fix it")],
        },
        {"node": 1, "addr": "10.0.0.2", "status": "error", "error": "InputError: bad config", "findings": []},
        None,
    ]
    area, table = probe_area(rows, nodes=3, world_size=3)
    messages = [f.message for f in area.findings]
    assert "node 2: no result of its probe reached rank 0 (no local rank 0 there?)" in messages
    assert "node 0 (10.0.0.1): rank 0: boom" in messages
    assert "node 1 (10.0.0.2): the probe could not run: InputError: bad config" in messages
    assert area.status == "error" and area.summary.startswith("0 of 3 nodes passed")
    assert [r[:4] for r in table["rows"]] == [
        ["node 0", "10.0.0.1", "0→cuda:0", "fail"],
        ["node 1", "10.0.0.2", "none", "error"],
    ]


def test_a_training_node_in_server_mode_meets_its_peers_and_generates_on_the_server_node(monkeypatch):
    """Plain data: node 2 of a job whose node 1 serves is the second of two training nodes."""
    from envdoctor.cluster.job import JobEnv
    from envdoctor.cluster.job_probe import _apply
    from envdoctor.probe.interface import ProbeSpec
    from envdoctor.probe.plan.rendezvous import job_node

    monkeypatch.setenv("ENVDOCTOR_NODE_ADDR", "10.0.0.3")
    job = JobEnv(
        rank=4,
        world_size=6,
        local_rank=0,
        local_world_size=2,
        node_rank=2,
        master="10.0.0.1:29500",
        launcher="torchrun",
    )
    spec = ProbeSpec(launcher=["torchrun"], use_vllm=True, vllm_mode="server", rank_gpus={0: 0, 1: 1})
    spec.server_launch, spec.generation_gpus = object(), [0]  # type: ignore[assignment]
    plan = {
        "server": {"node": 1, "addr": "10.0.0.9", "host": "vllm-node", "port": 8000, "group_port": 51216},
        "trainers": [0, 2],
        "rdzv": ("10.0.0.1", 30000),
    }
    _apply(spec, job, plan)
    argv = spec.launcher
    flags = {argv[i]: argv[i + 1] for i in range(3, len(argv), 2)}
    assert argv[1:3] == ["-m", "torch.distributed.run"]
    assert flags == {
        "--nnodes": "2",
        "--node_rank": "1",
        "--nproc_per_node": "2",
        "--master_addr": "10.0.0.1",
        "--master_port": "30000",
    }
    assert spec.rank_gpus == {2: 0, 3: 1}  # the second training node's global ranks
    assert spec.remote_server == ("vllm-node", 8000, 51216) and spec.server_launch is None
    assert spec.generation_gpus == [] and spec.env["VLLM_HOST_IP"] == "10.0.0.3"
    # the probe's launcher does not inherit the outer job's rank variables
    _argv, drop, moved = job_node(
        argv, {"RANK": "4", "PET_NNODES": "3", "TORCHELASTIC_RUN_ID": "x", "HOME": "/h"}
    )
    assert drop == {"RANK": None, "PET_NNODES": None, "TORCHELASTIC_RUN_ID": None} and moved == []


def test_server_mode_the_named_node_serves_and_the_other_trains_alone(tmp_path):
    """vllm_server_host 127.0.0.2: node 1 is the server node, node 0 the one training node. Without
    vLLM (CPU) both fail, each named after its node; what is proved is the job's protocol: the
    roles, the server held until the trainers are done, one report, every process ends."""
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("use_vllm: true\nvllm_mode: server\nvllm_server_host: 127.0.0.2\n")
    pytest.importorskip("trl")
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed: the GPU validation covers the server split")
    (c0, out0, err0), (c1, out1, err1) = _run(tmp_path, "--config", str(cfg), "--format", "json")
    assert out1 == "" and c0 == c1 == 1, err0[-3000:] + err1[-3000:]
    report = json.loads(out0)
    nodes = {n["node"]: n for n in report["probe"]["nodes"]}
    assert nodes[1]["role"] == "server" and nodes[0]["role"] == "trainer"
    assert nodes[1]["server"]["url"].startswith("http://127.0.0.2:")
    assert list(nodes[0]["ranks"]) == ["0"]  # the one training node's one rank: a world of 1
    rules = {(f["rule"], f["message"].split(":")[0]) for f in report["findings"]}
    assert ("PRB014", "node 1 (127.0.0.2)") in rules  # the server node: no vLLM to serve with
    # the trainer: TRL refuses use_vllm without vLLM, read with triage's knowledge (TRI013: the
    # package its check asks for), named after its node
    trainer = [f for f in report["findings"] if f["message"].startswith("node 0 (127.0.0.1)")]
    assert any(f["rule"] == "TRI013" and "vllm cannot be imported" in f["message"] for f in trainer), rules
    table = next(t for t in report["extra"]["tables"] if t["title"] == "Probe per node:")
    assert table["rows"][1][2].startswith("vLLM server :")
