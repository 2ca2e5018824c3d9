"""The probe contacts loopback only: a one-node probe's ranks meet on 127.0.0.1 whatever the
launch line's --master_addr says; a multi-node line is not launched, and the probe says at once
what its rendezvous would dial. Runs in a network namespace with only ``lo`` up (conftest)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from envdoctor.probe.plan.rendezvous import one_node
from tests.conftest import snapshot

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def _ctx(launch: str, accelerate: dict | None = None):
    from envdoctor.checks.context import Context
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.plan.build import build_plan

    facts = from_dict(snapshot(2), "x")
    plan = build_plan(config_dict={"use_vllm": False}, launch=launch, live=False)
    if accelerate:
        plan.accelerate = accelerate
    return Context(facts=facts, plan=plan, network=False)


@pytest.mark.parametrize(
    "argv, gone, want",
    [
        (
            ["torchrun", "--nproc_per_node", "2", "--master_addr", "10.1.2.3", "--master_port", "29511"],
            "10.1.2.3",
            ["--master_addr", "127.0.0.1", "--master_port", "29511"],
        ),
        (["torchrun", "--master-addr=10.1.2.3", "--nnodes", "1"], "10.1.2.3", ["--master_addr", "127.0.0.1"]),
        (
            ["torchrun", "--rdzv_backend", "c10d", "--rdzv_endpoint", "10.1.2.3:29400", "--nnodes", "1"],
            "10.1.2.3",
            ["--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:29400"],
        ),
        (
            ["accelerate", "launch", "--num_processes", "2", "--main_process_ip", "10.1.2.3"],
            "10.1.2.3",
            ["--main_process_ip", "127.0.0.1"],
        ),
        (
            ["deepspeed", "--master_addr", "head-node", "--num_gpus", "2"],
            "head-node",
            ["--master_addr", "127.0.0.1"],
        ),
    ],
)
def test_a_one_node_line_meets_on_loopback(argv, gone, want):
    out, env, changed = one_node(argv, {"MASTER_ADDR": "10.9.9.9", "PET_MASTER_ADDR": "10.9.9.8"})
    assert gone not in " ".join(out) and " ".join(want) in " ".join(out)
    assert env["MASTER_ADDR"] == "127.0.0.1" and env["PET_MASTER_ADDR"] is None
    assert any(gone in c for c in changed) and "MASTER_ADDR=10.9.9.9" in changed


def test_a_one_node_probe_with_a_remote_master_addr_rendezvous_on_loopback():
    """torchrun --master_addr 10.1.2.3 on one node: before, the ranks never started (the
    rendezvous dialled 10.1.2.3 until the probe's limit); now they meet on 127.0.0.1."""
    pytest.importorskip("torch")
    from envdoctor.probe.run.runner import ProbeSpec, run_probe

    r = run_probe(
        ProbeSpec(
            launcher=TORCHRUN
            + ["--nproc_per_node", "1", "--master_addr", "10.1.2.3", "--master_port", "29517"],
            fault="exit",
            timeout_s=60,
        )
    )
    assert 0 in r.ranks, (r.status, r.findings, r.log_tail)  # the rank started: it met
    assert r.status == "fail" and r.returncode  # the injected exit, not a timeout
    assert "10.1.2.3" not in r.argv and "127.0.0.1" in r.argv
    note = next(f for f in r.findings if f.rule == "PRB012" and "loopback" in f.message)
    assert "--master_addr 10.1.2.3" in note.message
    assert r.temp_dir_removed and r.leftover_pids == []


@pytest.mark.parametrize(
    "launch, dials",
    [
        (
            "torchrun --nnodes 2 --node_rank 0 --nproc_per_node 1 --master_addr 10.1.2.3 "
            "--master_port 29500 t.py",
            "10.1.2.3:29500",
        ),
        (
            "torchrun --nnodes 2 --rdzv_backend c10d --rdzv_endpoint head:29400 --nproc_per_node 1 t.py",
            "head:29400",
        ),
        (
            "accelerate launch --num_machines 2 --machine_rank 0 --num_processes 2 --main_process_ip "
            "10.1.2.3 --main_process_port 29600 t.py",
            "10.1.2.3:29600",
        ),
    ],
)
def test_a_multi_node_line_is_not_launched_and_says_what_it_would_dial(launch, dials, monkeypatch, attempts):
    from envdoctor.probe.plan.spec import spec_from_context
    from envdoctor.probe.run.runner import run_probe

    def no_launch(*args, **kwargs):
        raise AssertionError(f"launched {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", no_launch)
    spec = spec_from_context(_ctx(launch), timeout_s=600)
    r = run_probe(spec)
    assert r.status == "not run" and attempts.connects == []
    (f,) = [f for f in r.findings if f.rule == "PRB022"]
    assert dials in f.message and "2 nodes" in f.message and f.severity.value == "warning"


def test_the_probe_reads_a_user_server_on_loopback_only(attempts):
    from envdoctor.probe.stage.server import health

    assert health("10.1.2.3", 8000) is None and health("169.254.169.254", 80) is None
    assert health("vllm.internal.example", 8000) is None
    assert attempts.connects == [] and attempts.lookups == []
