"""`envdoctor check --distributed` under real launchers: torchrun (one node, two loopback
"nodes") and accelerate launch, on CPU over gloo. Each test bounds the whole job with a
subprocess timeout: a rank left waiting fails the test instead of hanging it."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from importlib.metadata import version

import pytest

from tests.cluster.helpers import JOB_TIMEOUT, free_port, job_env, run_nodes, snippet, torchrun

pytestmark = pytest.mark.distributed
HOST = socket.gethostname()


def test_one_node_two_ranks_the_documented_command(tmp_path):
    cmd = shlex.split(snippet("torchrun-one-node"))
    assert cmd[0] == "torchrun" and "--distributed" in cmd
    proc = subprocess.run(
        torchrun(*cmd[1:]), cwd=tmp_path, env=job_env(), capture_output=True, text=True, timeout=JOB_TIMEOUT
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr[-3000:]
    assert out.count("envdoctor 0.1.0 — checking a cluster of 1 node, 2 ranks via torchrun") == 1
    assert re.search(r"\[✓\] Cluster \(1 node, 2 ranks via torchrun; (gloo|nccl) all-reduce ok", out)
    assert "rank 0 (local 0), rank 1 (local 1)" in out  # both ranks on this node's table
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("all ")]
    assert len(rows) == 3  # three sizes (256 KiB … 8 MiB on CPU)
    assert all(r[-1] == "ok" and r[-2] == "GB/s" and float(r[-3]) > 0 for r in rows)


def test_two_nodes_name_the_planted_version_difference(tmp_path):
    trl = version("trl")
    planted = tmp_path / "node1.json"
    planted.write_text(json.dumps({"packages": {"trl": "0.15.2"}}))
    (c0, out0, err0), (c1, out1, err1) = run_nodes(
        tmp_path, job_env(), job_env(ENVDOCTOR_FACTS_OVERRIDE=str(planted))
    )
    assert (c0, c1) == (1, 1), out0 + err0[-2000:] + err1[-2000:]  # an error: both exit 1
    assert out1 == ""  # only rank 0 prints
    assert "checking a cluster of 2 nodes, 2 ranks via torchrun" in out0
    flat = " ".join(out0.split())
    assert (f"✗ CLU001 trl differs across nodes: {trl} on node 0 ({HOST}); 0.15.2 on node 1 ({HOST})") in flat
    assert f"pip install 'trl=={trl}' on node 1 ({HOST})" in flat
    assert f"node 1 ({HOST}): facts overridden from ENVDOCTOR_FACTS_OVERRIDE={planted}" in flat
    pair = [line for line in out0.splitlines() if "node 0" in line and "↔ node 1" in line]
    assert len(pair) == 1 and pair[0].split()[-1] == "ok"


def test_a_node_stuck_collecting_is_reported_and_every_process_exits(tmp_path):
    # node 1's site-packages holds a trl whose METADATA is a FIFO nobody writes: reading the
    # installed packages blocks for ever, a collection that hangs (a FIFO given as an input file,
    # such as ENVDOCTOR_FACTS_OVERRIDE, is refused at once instead)
    site = tmp_path / "site"
    (site / "trl-9.9.9.dist-info").mkdir(parents=True)
    os.mkfifo(site / "trl-9.9.9.dist-info" / "METADATA")
    report = tmp_path / "report.json"
    timeout = {"ENVDOCTOR_CLUSTER_TIMEOUT": "10"}
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    results = run_nodes(
        tmp_path,
        job_env(**timeout),
        job_env(PYTHONPATH=path, **timeout),
        "--format",
        "json",
        "-o",
        str(report),
    )
    assert [r[0] for r in results] == [1, 1], results
    data = json.loads(report.read_text())
    clu008 = [f for f in data["findings"] if f["rule"] == "CLU008"]
    assert len(clu008) == 1 and clu008[0]["evidence"]["node"] == 1
    assert "collecting the node's facts did not finish within 5 s" in clu008[0]["message"]
    assert "packages.py" in clu008[0]["message"]  # where it is stuck
    # the rest of the job was still checked: the collective works
    bandwidth = data["extra"]["cluster"]["bandwidth"]
    assert bandwidth and all(b["error"] is None and b["correct"] is not False for b in bandwidth)
    assert data["summary"]["errors"] == 1


def test_accelerate_launch_runs_the_module(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(free_port()),
        "-m",
        "envdoctor",
        "check",
        "--distributed",
        "--format",
        "json",
    ]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=job_env(), capture_output=True, text=True, timeout=JOB_TIMEOUT
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    cluster = data["extra"]["cluster"]
    assert cluster["launcher"] == "accelerate launch" and cluster["world_size"] == 2
    assert [r["rank"] for r in cluster["ranks"]] == [0, 1]
    assert {b["group"] for b in cluster["bandwidth"]} == {"all"}
    assert all(b["correct"] is not False and b["busbw_gbps"] > 0 for b in cluster["bandwidth"])
