"""The probe under faults on real GPUs (issue 7): run by docs/validation/probe_faults_gpu.sh.

Each fault is injected after the model is on the GPU (fault_at=trainer_init), so a leftover
process would show as GPU memory in NVML. After each run: the runner's verdict, its own
leftover check, and NVML's list of compute processes (only the stand-in may remain).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from envdoctor.facts.gpus import collect_gpus
from envdoctor.probe.run.runner import ProbeSpec, run_probe

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def gpu_processes() -> list[tuple[int, int, str, int | None]]:
    return [(g.index, p.pid, p.name[:40], p.used_mib) for g in collect_gpus().gpus
            for p in g.processes]


def show(title: str, r) -> None:
    print(f"\n=== {title}")
    print(f"status={r.status} phase={r.phase} wall={r.wall_s:.1f}s exit={r.returncode} "
          f"leftover_pids={r.leftover_pids} temp_dir_removed={r.temp_dir_removed}")
    for f in r.findings:
        print(f"  {f.severity.value:<7} {f.rule} {f.message[:160]}")
    time.sleep(1)
    print(f"  NVML compute processes now: {gpu_processes()}")


def main() -> None:
    base = dict(rank_gpus={0: 0}, fault_at="trainer_init",
                env={"CUDA_VISIBLE_DEVICES": "0"})
    print(f"NVML compute processes before: {gpu_processes()}")
    show("a rank that crashes after loading the model",
         run_probe(ProbeSpec(launcher=[sys.executable], fault="crash", **base)))
    show("a rank that hangs with the model on the GPU (limit 30 s)",
         run_probe(ProbeSpec(launcher=[sys.executable], fault="hang", timeout_s=30, **base)))
    show("a rank killed by SIGKILL (as the OOM killer does)",
         run_probe(ProbeSpec(launcher=[sys.executable], fault="killed", **base)))
    show("two ranks under torchrun, rank 0 never joins the collective (limit 40 s)",
         run_probe(ProbeSpec(launcher=TORCHRUN + ["--nproc_per_node", "2"],
                             fault="hang_collective", fault_at="start", timeout_s=40,
                             env={"CUDA_VISIBLE_DEVICES": "0"})))
    print("\n=== SIGTERM to envdoctor while the probe hangs on the GPU")
    code = ("import json, sys\nfrom envdoctor.probe.run.runner import ProbeSpec, run_probe\n"
            "r = run_probe(ProbeSpec(launcher=[sys.executable], fault='hang', "
            "fault_at='trainer_init', timeout_s=300, env={'CUDA_VISIBLE_DEVICES': '0'}))\n"
            "print(json.dumps({'status': r.status, 'leftover': r.leftover_pids, "
            "'removed': r.temp_dir_removed, 'findings': [f.rule for f in r.findings]}))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=os.environ)
    time.sleep(25)
    print(f"  during: {gpu_processes()}")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    print(f"  envdoctor's verdict: {json.loads(out.strip().splitlines()[-1])}")
    time.sleep(1)
    print(f"  NVML compute processes now: {gpu_processes()}")


if __name__ == "__main__":
    main()
