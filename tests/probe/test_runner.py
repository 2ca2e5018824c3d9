"""The runner on CPU: a real GRPO step under real launchers, the runner under faults, triage."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor.plan.launch import parse_launch
from envdoctor.probe.judge.failures import classify
from envdoctor.probe.plan.spec import launcher_argv
from envdoctor.probe.run.runner import ProbeSpec, run_probe
from tests.probe.leftovers import descendants, kill_all, left_behind

pytest.importorskip("trl")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


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
    assert r.temp_dir_removed and r.leftover_pids == [] and r.leftover_gpu == []
    assert rank["expected_device"] == "cpu" and rank["off_device"] == []
    assert rank["versions"]["trl"] and rank["peak_rss_mib"] > 100 and rank["step_s"] > 0
    t = r.timings
    assert t["launch"] >= 0 and t["steps"] > 0 and t["teardown"] >= 0
    assert t["total"] >= sum(t[k] for k in ("imports", "model_build", "trainer_init", "steps"))


def test_two_ranks_under_torchrun_on_cpu():
    r = run_probe(ProbeSpec(launcher=TORCHRUN + ["--nproc_per_node", "2"], rank_gpus={0: None, 1: None}))
    assert r.status == "pass", (r.findings, r.log_tail)
    assert sorted(r.ranks) == [0, 1] and all(d["world_size"] == 2 for d in r.ranks.values())
    assert r.leftover_pids == [] and r.temp_dir_removed


def test_crash_is_a_finding_with_the_log():
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="crash"))
    assert r.status == "fail" and "PRB001" in _rules(r)
    msg = next(f for f in r.findings if f.rule == "PRB001").message
    assert "injected crash" in msg and r.temp_dir_removed


def test_hang_hits_the_limit_and_ends_the_group(probe_tmp):
    start = time.monotonic()
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="hang", timeout_s=2))
    assert r.status == "timeout" and "PRB006" in _rules(r)
    assert time.monotonic() - start < 20
    assert r.leftover_pids == [] and r.temp_dir_removed and left_behind(probe_tmp) == []


def test_hang_in_a_collective_under_torchrun(probe_tmp):
    r = run_probe(
        ProbeSpec(launcher=TORCHRUN + ["--nproc_per_node", "2"], fault="hang_collective", timeout_s=12)
    )
    assert r.status == "timeout" and "PRB006" in _rules(r)
    assert r.leftover_pids == [] and r.temp_dir_removed and left_behind(probe_tmp) == []


def test_the_leftover_check_sees_a_worker_the_runner_failed_to_end(probe_tmp, monkeypatch):
    """Sabotage: with the group's teardown broken, the hung worker outlives the probe, and the
    check the tests above rely on must see it (then it is ended here)."""
    from envdoctor.probe.run import runner

    monkeypatch.setattr(runner, "end_group", lambda proc, grace_s: [])
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="hang", timeout_s=2))
    left = left_behind(probe_tmp)
    kill_all(left)
    assert r.status == "timeout"
    assert [p for p in left if "probe/run/worker.py" in p.cmdline], left


def test_the_leftover_check_is_this_tests_and_reads_whole_command_lines(tmp_path, probe_tmp):
    """Orphans (their parent exited: no longer below the test) are still this test's by their
    TMPDIR, or by a command line that names its temp dir past column 80; a process of another
    temp dir (another probe on the machine) is not."""
    other = tmp_path / "other"
    sleeper = "import time; time.sleep(120)  # " + "x" * 200
    spawn = (
        "import os, subprocess, sys\n"
        "def start(*extra, **env):\n"
        f"    subprocess.Popen([sys.executable, '-c', {sleeper!r}, *extra],"
        " start_new_session=True, env={'PATH': os.environ['PATH'], **env})\n"
        f"start(TMPDIR={str(probe_tmp)!r})\n"
        f"start({str(probe_tmp / 'spec.json')!r})\n"
        f"start(TMPDIR={str(other)!r})\n"
    )
    subprocess.run([sys.executable, "-c", spawn], check=True, timeout=60)
    left, elsewhere = left_behind(probe_tmp), left_behind(other)
    kill_all(left + elsewhere)
    assert len(left) == 2 and len(elsewhere) == 1, (left, elsewhere)
    assert sum(str(probe_tmp / "spec.json") in p.cmdline for p in left) == 1
    assert all(len(p.cmdline) > 200 for p in left)


def test_a_rank_killed_by_a_signal():
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="killed"))
    assert r.status == "fail"
    msg = next(f for f in r.findings if f.rule == "PRB001").message
    assert "died without a result" in msg and r.returncode == -signal.SIGKILL
    assert "OOM killer" in msg


def test_a_rank_that_exits_without_a_result():
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="exit"))
    assert r.status == "fail" and r.returncode == 3 and r.ranks[0]["finished"] is False
    prb001 = next(f for f in r.findings if f.rule == "PRB001")
    assert "exit code 3" in prb001.message and "log_tail" in prb001.evidence
    assert r.temp_dir_removed and r.leftover_pids == []


def test_an_oom_is_classified_with_its_numbers():
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="oom"))
    assert r.status == "fail" and "PRB001" not in _rules(r)
    oom = next(f for f in r.findings if f.rule == "PRB007")
    assert oom.evidence["want"] == "2.00 GiB" and oom.evidence["free"] == "1.06 GiB"
    assert oom.evidence["processes"] == [{"pid": "4242", "used": "78.12 GiB"}]


def test_ctrl_c_while_waiting_ends_the_group_and_removes_the_temp_dir(monkeypatch):
    from envdoctor.probe.run import runner

    seen: dict = {}
    real_wait = runner._wait

    def interrupted_wait(proc, log, timeout_s, result, on_phase, *rest):
        seen["pid"] = proc.pid
        real_wait(proc, log, 1.5, result, on_phase, *rest)  # let the worker start and hang
        seen["tmp"] = log.parent
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "_wait", interrupted_wait)
    r = run_probe(ProbeSpec(launcher=[sys.executable], fault="hang", timeout_s=60))
    assert r.status == "interrupted" and "PRB006" in _rules(r)
    assert r.leftover_pids == [] and r.temp_dir_removed and not seen["tmp"].exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(seen["pid"], 0)


def test_missing_launcher():
    r = run_probe(ProbeSpec(launcher=["/nonexistent/torchrun"]))
    assert r.status == "error" and "could not start the launcher" in r.findings[0].message
    assert r.temp_dir_removed


def test_sigterm_to_envdoctor_ends_the_probe_and_cleans_up(probe_tmp):
    code = (
        "import sys, json\n"
        "from envdoctor.probe.run.runner import ProbeSpec, run_probe\n"
        "r = run_probe(ProbeSpec(launcher=[sys.executable], fault='hang', timeout_s=120))\n"
        "print(json.dumps({'status': r.status, 'left': r.leftover_pids, "
        "'removed': r.temp_dir_removed}))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # TMPDIR: probe_tmp
    try:
        tree = _wait_for_worker(proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    import json

    data = json.loads(out.strip().splitlines()[-1])
    assert data == {"status": "interrupted", "left": [], "removed": True}
    assert left_behind(probe_tmp, seen=tree) == []


def _wait_for_worker(proc: subprocess.Popen, limit_s: float = 90) -> list:
    """The processes below ``proc`` once the probe's worker runs among them (it hangs there)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and proc.poll() is None:
        tree = descendants(proc.pid)
        if any("probe/run/worker.py" in p.cmdline for p in tree):
            return tree
        time.sleep(0.2)
    pytest.fail(f"the probe's worker did not start within {limit_s} s (exit {proc.poll()})")


@pytest.mark.parametrize(
    "text, rule",
    [
        (
            "ValueError: GRPOTrainer does not support `nn.DataParallel`, which `Trainer` uses when "
            "several GPUs are visible to a single process.",
            "LAY003",
        ),  # triage's id, one per failure
        (
            "ValueError: The requested device for vllm (cuda:4) is not available. You are likely using "
            "vLLM without restricting the number of GPUs for training.",
            "LAY002",
        ),
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two "
            "devices, cuda:1 and cuda:0!",
            "PRB010",
        ),
        (
            "RuntimeError: The size of tensor a (1034) must match the size of tensor b (1035) at "
            "non-singleton dimension 2",
            "PKG002",
        ),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 780.00 MiB. GPU 3 has a total "
            "capacity of 23.69 GiB of which 698.00 MiB is free.",
            "PRB007",
        ),
        (
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
            "unhandled system error",
            "TRI002",
        ),
        ("ModuleNotFoundError: No module named 'trl'", "PRB009"),
        (
            "ValueError: The global train batch size (2 x 4) must be evenly divisible by the number of "
            "generations per prompt (3). Given the current train batch size, the valid values for the "
            "number of generations are: [2, 4, 8].",
            "CFG002",
        ),  # TRL 0.15
        (
            "ValueError: generation_batch_size (4) must be divisible by num_generations (3).",
            "CFG002",
        ),  # TRL 1.16
        ("ModuleNotFoundError: No module named 'transformers.models'", "PRB009"),
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 23.69 GiB total "
            "capacity; 20.10 GiB already allocated; 698.00 MiB free; 21.00 GiB reserved in total by "
            "PyTorch)",
            "PRB007",
        ),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 TiB. GPU 3 has a "
            "total capacity of 79.19 GiB of which 698.00 MiB is free.",
            "PRB007",
        ),
        (
            "[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=3, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.",
            "TRI002",
        ),
    ],
)
def test_known_failures_are_classified(text, rule):
    found = classify(text)
    assert rule in {f.rule for f in found}
    if rule == "PRB007":
        oom = next(f for f in found if f.rule == "PRB007")
        assert oom.evidence["gpu"] == "3" and "698.00 MiB free" in oom.message


def test_a_failure_has_the_same_id_and_fix_in_the_probe_and_in_triage():
    """One id, one text, one fix per failure (issue #26): the probe reads a rank's error with
    triage's signatures and the known-failures catalogue."""
    from tests.triage.helpers import findings, scan_bytes

    for text in (
        "ValueError: GRPOTrainer does not support `nn.DataParallel`, which `Trainer` uses "
        "when several GPUs are visible to a single process.",
        "ValueError: generation_batch_size (4) must be divisible by num_generations (3).",
        "ImportError: cannot import name 'GuidedDecodingParams' from 'vllm.sampling_params'",
    ):
        probe = [(f.rule, f.fix) for f in classify(text)]
        triage = [(f.rule, f.fix) for f in findings(scan_bytes(text + "\n"))]
        assert probe and probe == triage, (probe, triage)


def test_unknown_text_is_not_classified():
    assert classify("Traceback ...\nKeyError: 'foo'") == []
    # the warning torch prints at every exit without destroy_process_group is not an NCCL error
    assert (
        classify(
            "[rank0]:[W1122 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group "
            "has NOT been destroyed before we destruct ProcessGroupNCCL."
        )
        == []
    )


def test_oom_evidence_lists_the_other_processes():
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a "
        "total capacity of 79.19 GiB of which 12.81 MiB is free. Process 812 has 61.40 GiB "
        "memory in use. Process 901 has 17.70 GiB memory in use."
    )
    (oom,) = classify(text)
    assert oom.rule == "PRB007" and oom.evidence["gpu"] == "1"
    assert [p["pid"] for p in oom.evidence["processes"]] == ["812", "901"]
    assert "pid 812 (61.40 GiB)" in oom.message


@pytest.mark.parametrize(
    "line, argv0, rest",
    [
        ("torchrun --nproc_per_node 2 -m pkg.train --x 1", "torchrun", ["--nproc_per_node", "2"]),
        (
            "accelerate launch --num_processes 3 train.py --lr 1",
            "accelerate",
            ["launch", "--num_processes", "3"],
        ),
        ("python -m pkg.train", "python", []),
    ],
)
def test_launcher_argv_drops_the_users_script(line, argv0, rest):
    argv = launcher_argv(parse_launch(line))
    assert os.path.basename(argv[0]).startswith(argv0) and argv[1:] == rest


def test_trl_refusal_and_dataparallel_are_one_finding_each():
    from envdoctor.probe.run.runner import ProbeResult, _judge

    refusal = {
        "finished": True,
        "ok": False,
        "n_gpu": 2,
        "pid": 1,
        "error": {
            "type": "ValueError",
            "message": "GRPOTrainer does not support `nn.DataParallel`, which "
            "`Trainer` uses when several GPUs are visible to a single process.",
        },
    }
    r = ProbeResult(status="ran", returncode=1, ranks={0: refusal})
    _judge(ProbeSpec(launcher=[]), r, None)
    assert [f.rule for f in r.findings if f.rule != "PRB008"] == ["LAY003"]  # triage's id
    assert r.status == "fail"
    legacy = {
        "finished": True,
        "ok": True,
        "n_gpu": 2,
        "pid": 1,
        "data_parallel": True,
        "wrapper": "DataParallel",
        "device": "cuda:0",
        "param_devices": ["cuda:0"],
        "loss_finite": True,
    }
    r = ProbeResult(status="ran", returncode=0, ranks={0: legacy})
    _judge(ProbeSpec(launcher=[]), r, None)
    assert [f.rule for f in r.findings if f.rule != "PRB008"] == ["PRB002"]
    assert "DataParallel" in r.findings[0].message
    assert "torchrun --nproc_per_node N or set CUDA_VISIBLE_DEVICES" in r.findings[0].fix


def test_tensors_off_the_expected_device_and_non_finite_loss():
    from envdoctor.probe.run.runner import ProbeResult, _judge

    rank = {
        "finished": True,
        "ok": True,
        "n_gpu": 1,
        "pid": 1,
        "device": "cuda:0",
        "expected_device": "cuda:0",
        "param_devices": ["cuda:0"],
        "grad_devices": ["cuda:0", "cuda:1"],
        "optimizer_state_devices": ["cuda:0"],
        "loss": float("nan"),
        "loss_finite": False,
    }
    r = ProbeResult(status="ran", returncode=0, ranks={0: rank})
    _judge(ProbeSpec(launcher=[]), r, None)
    assert r.status == "fail" and {"PRB004", "PRB005"} <= _rules(r)
    assert next(f for f in r.findings if f.rule == "PRB004").evidence["grad_devices"] == ["cuda:0", "cuda:1"]


def test_no_isolation_verdict_without_a_planned_gpu_per_rank():
    from envdoctor.probe.observe.watcher import GpuWatch, Sample
    from envdoctor.probe.run.runner import ProbeResult, _judge_isolation

    watch = GpuWatch(pgid=1)
    watch.seen[(42, 0)] = Sample(pid=42, gpu=0, max_mib=500, first_s=0.1)
    r = ProbeResult(status="pass", ranks={0: {"pid": 42}})
    _judge_isolation(ProbeSpec(launcher=[]), r, watch)
    assert r.isolation == "not measurable" and r.peak_mib == {0: 500}
    assert [f.rule for f in r.findings] == ["PRB008"]
    r = ProbeResult(status="pass", ranks={0: {"pid": 42}})
    _judge_isolation(ProbeSpec(launcher=[], rank_gpus={0: 1}, generation_gpus=[0]), r, watch)
    assert r.isolation == "violated" and "held 500 MiB on GPU 0 reserved for vLLM" in r.findings[0].message
    assert r.isolation_offenders == [{"rank": 0, "pid": 42, "gpu": 0, "mib": 500, "role": "generation"}]


def test_isolation_roles_and_proof():
    from envdoctor.probe.observe.watcher import GpuWatch, Sample
    from envdoctor.probe.run.runner import ProbeResult, _judge_isolation

    watch = GpuWatch(pgid=1)
    for pid, gpu, mib in ((10, 0, 900), (10, 1, 1946), (11, 1, 800), (11, 3, 300)):
        watch.seen[(pid, gpu)] = Sample(pid=pid, gpu=gpu, max_mib=mib, first_s=0.0)
    spec = ProbeSpec(launcher=[], rank_gpus={0: 0, 1: 1}, generation_gpus=[2])
    r = ProbeResult(status="pass", ranks={0: {"pid": 10}, 1: {"pid": 11}})
    _judge_isolation(spec, r, watch)
    assert [(o["rank"], o["gpu"], o["role"]) for o in r.isolation_offenders] == [
        (0, 1, "other rank's"),
        (1, 3, "idle"),
    ]
    assert "rank 0, pid 10, held 1.9 GiB on GPU 1 of another rank" in r.isolation_detail
    assert r.peak_mib == {0: 900, 1: 1946, 3: 300}
    del watch.seen[(10, 1)], watch.seen[(11, 3)]
    r = ProbeResult(status="pass", ranks={0: {"pid": 10, "step_s": 1.0}, 1: {"pid": 11, "step_s": 1.1}})
    _judge_isolation(spec, r, watch)
    assert r.isolation == "proved" and "GPU 2" in r.isolation_detail and not r.findings
    # no violation seen, but a rank stopped before its step (TRL refused the config): no proof
    r = ProbeResult(status="ran", ranks={0: {"pid": 10, "step_s": 1.0}, 1: {"pid": 11}})
    _judge_isolation(spec, r, watch)
    assert r.isolation == "not proved" and "not every rank finished" in r.isolation_detail


def test_a_probe_pid_still_on_a_gpu_afterwards_is_ended_and_reported():
    from envdoctor.probe.observe.watcher import GpuWatch, Sample
    from envdoctor.probe.run.runner import ProbeResult, _end_gpu_holders

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watch = GpuWatch(pgid=1, nvml=object())
    watch.seen[(child.pid, 1)] = Sample(pid=child.pid, gpu=1, max_mib=700, first_s=0.0)
    watch._processes = lambda: [(child.pid, 1, 650)] if child.poll() is None else []
    r = ProbeResult(status="pass")
    _end_gpu_holders(watch, r)
    assert child.wait(timeout=5) is not None
    assert r.leftover_gpu == [{"pid": child.pid, "gpu": 1, "mib": 650}] and r.leftover_pids == []


def test_watcher_without_nvml_is_a_no_op():
    from envdoctor.probe.observe.watcher import GpuWatch

    watch = GpuWatch(pgid=os.getpgid(0)).start()
    if watch.error is None:
        watch.close()
        pytest.skip("NVML is available here")
    assert "NVML" in watch.error and watch.stop() == {} and watch.holding({1}) == []
    watch.close()


def test_a_rank_ended_by_the_launcher_after_another_failed_is_not_a_second_error():
    """Seen on 2 × H200: TRL refused the batch shape on rank 0, torchrun ended rank 1."""
    from envdoctor.probe.run.runner import ProbeResult, _judge

    err = {
        "type": "ValueError",
        "message": "generation_batch_size (6) must be divisible by num_generations (4).",
        "traceback": "",
    }
    r = ProbeResult(
        status="ran",
        returncode=1,
        ranks={0: {"pid": 10, "finished": True, "error": err}, 1: {"pid": 11, "finished": False}},
    )
    _judge(ProbeSpec(launcher=[], rank_gpus={0: 0, 1: 1}), r, None)
    errors = [(f.rule, f.severity.value) for f in r.findings if f.severity.value == "error"]
    assert errors == [("CFG002", "error")]
    ended = next(f for f in r.findings if f.rule == "PRB001")
    assert ended.severity.value == "info" and "ended by the launcher after rank 0" in ended.message


def test_the_probe_writes_nothing_to_the_users_home(tmp_path, monkeypatch):
    """Caches of the libraries it runs (vLLM, flashinfer, Triton, Inductor, CUDA, HF) go to the
    probe's temp dir and away with it; the user's home is as it was."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "HF_HOME", "TRITON_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    r = run_probe(ProbeSpec(launcher=[sys.executable], rank_gpus={0: None}))
    assert r.status == "pass", (r.findings, r.log_tail)
    assert list(home.rglob("*")) == [] and r.temp_dir_removed


def test_every_cache_location_points_into_the_temp_dir(tmp_path):
    from envdoctor.probe.run.runner import OFFLINE, private_dirs

    env = private_dirs(tmp_path)
    for var in (
        "HF_HOME",
        "TMPDIR",
        "TRITON_CACHE_DIR",
        "TORCHINDUCTOR_CACHE_DIR",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "VLLM_CACHE_ROOT",
        "VLLM_CONFIG_ROOT",
        "FLASHINFER_WORKSPACE_BASE",
        "CUDA_CACHE_PATH",
        "HUMMING_CACHE_DIR",
        "HUMMING_TMP_DIR",
    ):
        assert Path(env[var]).is_relative_to(tmp_path), var
    assert OFFLINE["VLLM_NO_USAGE_STATS"] == "1" and OFFLINE["HF_HUB_OFFLINE"] == "1"


def test_a_probe_oom_gets_the_cause_and_fix_triage_gives_the_same_message():
    held = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a "
        "total capacity of 79.19 GiB of which 12.81 MiB is free. Process 812 has 61.40 GiB "
        "memory in use. Process 901 has 17.70 GiB memory in use."
    )
    (oom,) = classify(held)
    assert oom.evidence["cause"] == "other-process" and "stop them" in oom.fix
    assert "expandable_segments" not in oom.fix
    big = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 TiB. GPU 3 has a "
        "total capacity of 79.19 GiB of which 698.00 MiB is free."
    )
    (oom,) = classify(big)
    assert oom.evidence["cause"] == "capacity" and "gradient_checkpointing" in oom.fix


def test_a_missing_package_is_installed_where_the_launch_line_runs():
    (f,) = classify("ModuleNotFoundError: No module named 'datasets'", "/usr/bin/python3")
    assert f.rule == "PRB009" and "(/usr/bin/python3)" in f.message
    assert f.fix == "/usr/bin/python3 -m pip install 'grpo-envdoctor[probe]' datasets"
    (f,) = classify("ModuleNotFoundError: No module named 'trl'", "/opt/venv/bin/torchrun")
    assert f.fix == "pip install 'grpo-envdoctor[probe]' trl in the environment of /opt/venv/bin/torchrun"


def test_every_missing_module_is_named_with_one_install_command():
    """The worker names every module of the stack the interpreter lacks, not the first alone;
    the fix installs them all in one command, at the versions envdoctor knows."""
    text = (
        "ModuleNotFoundError: No module named 'torch' (envdoctor-probe missing modules: torch, "
        "transformers, trl, accelerate, datasets)"
    )
    (f,) = classify(text, "/venv/bin/python", {"torch": "2.6.0+cu124", "trl": "0.19.0"})
    assert f.rule == "PRB009"
    assert f.evidence["modules"] == ["torch", "transformers", "trl", "accelerate", "datasets"]
    assert "torch, transformers, trl, accelerate, datasets" in f.message
    assert f.fix == (
        "/venv/bin/python -m pip install 'grpo-envdoctor[probe]' 'torch==2.6.0' transformers "
        "'trl==0.19.0' accelerate datasets"
    )


def test_the_worker_lists_every_missing_module(tmp_path):
    """check_stack() in an interpreter without the stack (-I -S: no site-packages)."""
    import subprocess
    import sys

    from envdoctor.probe.run import worker

    code = (
        "import sys, importlib.util; sys.path.insert(0, sys.argv[1]); "
        "spec = importlib.util.spec_from_file_location('w', sys.argv[2]); "
        "w = importlib.util.module_from_spec(spec); spec.loader.exec_module(w); w.check_stack()"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(tmp_path), worker.__file__],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    (f,) = classify(proc.stderr, sys.executable)
    assert f.evidence["modules"] == list(worker.STACK), proc.stderr
