"""The NVML watch of the generation GPUs, with a fake NVML: who appears there, memory trends."""

from __future__ import annotations

import logging

from envdoctor.integrations.monitor import GpuMonitor, slope
from tests.integrations.helpers import MIB, FakeProc


def watch(nvml, **kw) -> GpuMonitor:
    kw.setdefault("job_pids", {100: "rank 0", 101: "rank 1"})
    mon = GpuMonitor([1], nvml=nvml, **kw)
    assert mon.start()
    return mon


def test_a_job_process_on_the_generation_gpu_warns_once(fake_nvml, caplog):
    mon = watch(fake_nvml)
    fake_nvml.procs[1] = [FakeProc(555, 70000 * MIB)]  # the vLLM server: not ours
    fake_nvml.procs[0] = [FakeProc(100, 9000 * MIB)]  # rank 0 on its own GPU: not watched
    with caplog.at_level(logging.WARNING, logger="envdoctor"):
        assert mon.sample(0) == []
        fake_nvml.procs[1].append(FakeProc(101, 600 * MIB))
        (said,) = mon.sample(50)
        assert mon.sample(100) == []  # once per condition
    assert "RUN005" in said and "pid 101 (rank 1)" in said and "generation GPU 1" in said
    assert "step 50" in said and "600 MiB" in said
    assert [r.getMessage() for r in caplog.records] == [said]


def test_allowed_and_colocate_processes_do_not_warn(fake_nvml):
    fake_nvml.procs[1] = [FakeProc(100, 30000 * MIB)]
    assert watch(fake_nvml, allowed_pids={100}).sample(1) == []  # legacy: vLLM inside rank 0
    assert watch(fake_nvml, check_pids=False).sample(1) == []  # colocate: shared by design


def test_free_memory_below_the_threshold_warns(fake_nvml):
    mon = watch(fake_nvml, min_free_mib=2048)
    fake_nvml.free[1] = 9000
    assert mon.sample(0) == []
    fake_nvml.free[1] = 1500
    (said,) = mon.sample(50)
    assert "RUN006" in said and "1500 MiB free at step 50" in said and "below 2048" in said
    assert mon.sample(100) == []


def test_free_memory_trending_to_oom_warns_before_it_runs_out(fake_nvml):
    mon = watch(fake_nvml, min_free_mib=1024, horizon_steps=1000)
    said = []
    for step, free in [(0, 8000), (50, 7400), (100, 6900), (150, 6300)]:
        fake_nvml.free[1] = free
        said += mon.sample(step)
    (msg,) = said  # from the third sample on, once
    assert "fell from 8000 to 6900 MiB over steps 0–100" in msg and "≈11.0 MiB/step" in msg
    assert "around step 634" in msg  # 100 + (6900 - 1024) / 11 MiB per step


def test_flat_or_slow_memory_does_not_warn(fake_nvml):
    mon = watch(fake_nvml, horizon_steps=1000)
    for step, free in [(0, 8000), (50, 8010), (100, 7990), (150, 8000), (200, 7995)]:
        fake_nvml.free[1] = free
        assert mon.sample(step) == []
    slow = watch(fake_nvml, horizon_steps=100)  # falls, but OOM is far beyond the horizon
    for step, free in [(0, 60000), (50, 59500), (100, 59000)]:
        fake_nvml.free[1] = free
        assert slow.sample(step) == []


def test_no_nvml_or_no_gpu_means_no_watch(fake_nvml):
    assert not GpuMonitor([], nvml=fake_nvml).start()
    mon = GpuMonitor([7], nvml=fake_nvml)  # not a GPU of this machine
    assert not mon.start()

    class Broken:
        def nvmlInit(self):  # noqa: N802
            raise RuntimeError("driver not loaded")

    broken = GpuMonitor([0], nvml=Broken())
    assert not broken.start() and "driver not loaded" in broken.error


def test_slope():
    assert slope([(0, 100), (10, 80), (20, 60)]) == -2.0
    assert slope([(5, 1), (5, 2)]) == 0.0
