"""Helpers of the cluster tests: real torchrun jobs on this machine, snapshots of nodes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB_TIMEOUT = 180  # seconds: a run that needs longer hangs; the test fails instead of waiting


def snippet(name: str) -> str:
    """The fenced block after ``<!-- snippet: NAME -->`` in docs/cluster.md."""
    text = (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8")
    m = re.search(rf"<!-- snippet: {re.escape(name)} -->\s*```[a-z]*\n(.*?)```", text, re.S)
    assert m, f"no snippet {name!r} in docs/cluster.md"
    return m.group(1).strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CUDA_", "PYTORCH_", "ENVDOCTOR_", "NCCL_", "ACCELERATE_"))
    }
    env.update(NO_COLOR="1", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)
    return env


def torchrun(*args: str) -> list[str]:
    """``torchrun ARGS`` as this interpreter runs it."""
    return [sys.executable, "-m", "torch.distributed.run", *args]


def node_cmd(node_rank: int, port: int, *check_args: str) -> list[str]:
    """One of two "nodes" on loopback: one torchrun per node rank, one process each."""
    return torchrun(
        "--nnodes",
        "2",
        "--node_rank",
        str(node_rank),
        "--nproc_per_node",
        "1",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(port),
        "-m",
        "envdoctor",
        "check",
        "--distributed",
        "--no-network",
        *check_args,
    )


def run_nodes(cwd: Path, env0: dict, env1: dict, *check_args: str) -> tuple:
    """Start both nodes at once; both must end within JOB_TIMEOUT (no rank left waiting)."""
    port = free_port()
    procs = [
        subprocess.Popen(
            node_cmd(i, port, *check_args),
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for i, env in ((0, env0), (1, env1))
    ]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=JOB_TIMEOUT))
    finally:
        for p in procs:  # a hang: end that torchrun and its workers (its own process group)
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs, strict=True)]
