"""The probe on CPU: a real GRPO step under real launchers, and the runner under faults."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor.plan.launch import parse_launch
from envdoctor.probe.failures import classify
from envdoctor.probe.plan import launcher_argv
from envdoctor.probe.runner import ProbeSpec, run_probe

pytest.importorskip("trl")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def _no_worker_left(tmp_marker: str = "envdoctor-probe-") -> bool:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return not [line for line in out.splitlines() if "probe/worker.py" in line
                and tmp_marker in line]


def _rules(result) -> set[str]:
    return {f.rule for f in result.findings}


def test_real_step_on_cpu_passes():
    r = run_probe(ProbeSpec(launcher=[sys.executable], rank_gpus={0: None}))
    assert r.status == "pass", (r.findings, r.log_tail)
    rank = r.ranks[0]
    assert rank["device"] == "cpu" and rank["n_gpu"] == 0 and not rank["data_parallel"]
    assert rank["param_devices"] == rank["grad_devices"] == ["cpu"]
    assert rank["optimizer_state_devices"] == ["cpu"] and rank["loss_finite"]
    assert set(rank["phases"]) >= {"imports", "model_build", "trainer_init", "steps", "total"}
    assert 10_000 < rank["parameters"] < 1_000_000
    assert r.isolation == "not measurable" and "PRB008" in _rules(r)
    assert r.temp_dir_removed and r.leftover_pids == []


def test_two_ranks_under_torchrun_on_cpu():
    r = run_probe(ProbeSpec(launcher=TORCHRUN + ["--nproc_per_node", "2"],
                            rank_gpus={0: None, 1: None}))
    assert r.status == "pass", (r.findings, r.log_tail)
    assert sorted(r.ranks) == [0, 1] and all(d["world_size"] == 2 for d in r.ranks.values())
    assert r.leftover_pids == [] and r.temp_dir_removed


def test_crash_is_a_finding_with_the_log():
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="crash"))
    assert r.status == "fail" and "PRB001" in _rules(r)
    msg = next(f for f in r.findings if f.rule == "PRB001").message
    assert "injected crash" in msg and r.temp_dir_removed


def test_hang_hits_the_limit_and_ends_the_group():
    start = time.monotonic()
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="hang", timeout_s=2))
    assert r.status == "timeout" and "PRB006" in _rules(r)
    assert time.monotonic() - start < 20
    assert r.leftover_pids == [] and r.temp_dir_removed and _no_worker_left()


def test_hang_in_a_collective_under_torchrun():
    r = run_probe(ProbeSpec(launcher=TORCHRUN + ["--nproc_per_node", "2"], fault="hang_collective",
                            timeout_s=25))
    assert r.status == "timeout" and "PRB006" in _rules(r)
    assert r.leftover_pids == [] and r.temp_dir_removed and _no_worker_left()


def test_a_rank_killed_by_a_signal():
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="killed"))
    assert r.status == "fail"
    msg = next(f for f in r.findings if f.rule == "PRB001").message
    assert "died without a result" in msg and r.returncode == -signal.SIGKILL


def test_missing_launcher():
    r = run_probe(ProbeSpec(launcher=["/nonexistent/torchrun"]))
    assert r.status == "error" and "could not start the launcher" in r.findings[0].message
    assert r.temp_dir_removed


def test_sigterm_to_envdoctor_ends_the_probe_and_cleans_up(tmp_path):
    code = ("import sys, json\n"
            "from envdoctor.probe.runner import ProbeSpec, run_probe\n"
            "r = run_probe(ProbeSpec(launcher=[sys.executable], fault='hang', timeout_s=120))\n"
            "print(json.dumps({'status': r.status, 'left': r.leftover_pids, "
            "'removed': r.temp_dir_removed}))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    time.sleep(4)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    import json

    data = json.loads(out.strip().splitlines()[-1])
    assert data == {"status": "interrupted", "left": [], "removed": True}
    assert _no_worker_left()


@pytest.mark.parametrize("text, rule", [
    ("ValueError: GRPOTrainer does not support `nn.DataParallel`, which `Trainer` uses when "
     "several GPUs are visible to a single process.", "PRB002"),
    ("ValueError: The requested device for vllm (cuda:4) is not available. You are likely using "
     "vLLM without restricting the number of GPUs for training.", "LAY001"),
    ("RuntimeError: Expected all tensors to be on the same device, but found at least two "
     "devices, cuda:1 and cuda:0!", "PRB010"),
    ("RuntimeError: The size of tensor a (1034) must match the size of tensor b (1035) at "
     "non-singleton dimension 2", "PRB010"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 780.00 MiB. GPU 3 has a total "
     "capacity of 23.69 GiB of which 698.00 MiB is free.", "PRB007"),
    ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
     "unhandled system error", "PRB011"),
    ("ModuleNotFoundError: No module named 'trl'", "PRB009"),
])
def test_known_failures_are_classified(text, rule):
    found = classify(text)
    assert rule in {f.rule for f in found}
    if rule == "PRB007":
        oom = next(f for f in found if f.rule == "PRB007")
        assert oom.evidence["gpu"] == "3" and "698.00 MiB free" in oom.message


def test_unknown_text_is_not_classified():
    assert classify("Traceback ...\nKeyError: 'foo'") == []


@pytest.mark.parametrize("line, argv0, rest", [
    ("torchrun --nproc_per_node 2 -m pkg.train --x 1", "torchrun", ["--nproc_per_node", "2"]),
    ("accelerate launch --num_processes 3 train.py --lr 1", "accelerate",
     ["launch", "--num_processes", "3"]),
    ("python -m pkg.train", "python", []),
])
def test_launcher_argv_drops_the_users_script(line, argv0, rest):
    argv = launcher_argv(parse_launch(line))
    assert os.path.basename(argv[0]).startswith(argv0) and argv[1:] == rest


def test_trl_refusal_and_dataparallel_are_one_finding_each():
    from envdoctor.probe.runner import ProbeResult, _judge

    refusal = {"finished": True, "ok": False, "n_gpu": 2, "pid": 1, "error": {
        "type": "ValueError", "message": "GRPOTrainer does not support `nn.DataParallel`, which "
        "`Trainer` uses when several GPUs are visible to a single process."}}
    r = ProbeResult(status="ran", returncode=1, ranks={0: refusal})
    _judge(ProbeSpec(launcher=[]), r, None)
    assert [f.rule for f in r.findings if f.rule != "PRB008"] == ["PRB002"]
    assert r.status == "fail"
    legacy = {"finished": True, "ok": True, "n_gpu": 2, "pid": 1, "data_parallel": True,
              "wrapper": "DataParallel", "device": "cuda:0", "param_devices": ["cuda:0"],
              "loss_finite": True}
    r = ProbeResult(status="ran", returncode=0, ranks={0: legacy})
    _judge(ProbeSpec(launcher=[]), r, None)
    assert [f.rule for f in r.findings if f.rule != "PRB008"] == ["PRB002"]
    assert "DataParallel" in r.findings[0].message


def test_no_isolation_verdict_without_a_planned_gpu_per_rank():
    from envdoctor.probe.runner import ProbeResult, _judge_isolation
    from envdoctor.probe.watcher import GpuWatch, Sample

    watch = GpuWatch(pgid=1)
    watch.seen[(42, 0)] = Sample(pid=42, gpu=0, max_mib=500, first_s=0.1)
    r = ProbeResult(status="pass", ranks={0: {"pid": 42}})
    _judge_isolation(ProbeSpec(launcher=[]), r, watch)
    assert r.isolation == "not measurable" and r.peak_mib == {0: 500}
    assert [f.rule for f in r.findings] == ["PRB008"]
    r = ProbeResult(status="pass", ranks={0: {"pid": 42}})
    _judge_isolation(ProbeSpec(launcher=[], rank_gpus={0: 1}, generation_gpus=[0]), r, watch)
    assert r.isolation == "violated" and "held 500 MiB on GPU 0 reserved for vLLM" in \
        r.findings[0].message
