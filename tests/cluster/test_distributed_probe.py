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
    assert area["summary"].startswith("2 of 2 nodes passed; 2 of 2 ranks")
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
