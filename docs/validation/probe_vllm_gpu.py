"""The probe's vLLM paths on a real GPU (issue 14). Run by probe_vllm_gpu.sh; one GPU is enough.

    python3 docs/validation/probe_vllm_gpu.py colocate colocate_greedy taken server beside

Each scenario builds the plan from a config and launch lines exactly as `envdoctor probe
--config C --launch L1 --launch L2` does, runs the probe, and prints the summary line, the
findings, the phases with their seconds, and what NVML saw. Scenarios:

- colocate: vllm_mode colocate at 0.3, 4 per device (TRL's max_num_seqs 4 < 8)
- colocate8: colocate at 0.3, 8 per device (TRL's max_num_seqs 8)
- colocate_sleep: colocate at 0.3 with vllm_enable_sleep_mode (run it under an allocator config)
- colocate_greedy: colocate at 0.99: the trainer's own CUDA context leaves vLLM too little
- taken: a stand-in holds most of the server's GPU, the server line asks 0.3 → holder, GPU named
- server: the server at 0.3 on GPU $SERVER_GPU (default 0: the trainer's own GPU, which NCCL's
  weight sync refuses; SERVER_GPU=1 on two GPUs is the healthy split)
- beside: a user's server already runs on the server's GPU (port 8000): read only, probe server
  beside it
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from envdoctor.checks.context import Context
from envdoctor.commands.probe import probe_area
from envdoctor.facts.collect import collect_facts
from envdoctor.plan.build import build_plan
from envdoctor.probe.stage.server import health
from envdoctor.probe.plan.tinymodel import write_tiny_model

TIMEOUT = 240.0
#: SERVER_GPU=1 on a machine of two GPUs: the server split (trainer on 0, server on 1)
SERVER_GPU = os.environ.get("SERVER_GPU", "0")
TRAINER = "CUDA_VISIBLE_DEVICES=0 python3 train.py"
SERVER = (f"CUDA_VISIBLE_DEVICES={SERVER_GPU} trl vllm-serve --model Qwen/Qwen2.5-0.5B-Instruct "
          "--gpu_memory_utilization 0.3 --port 8000")


def _nvml() -> list[tuple[int, int, str, int]]:
    """(GPU, pid, name, MiB) of every process, and (GPU, -1, "free MiB", free) per GPU."""
    import pynvml

    pynvml.nvmlInit()
    out = []
    for gpu in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(gpu)
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
            try:
                name = Path(f"/proc/{p.pid}/cmdline").read_bytes().split(b"\0")[0].decode()[-30:]
            except OSError:
                name = "?"
            out.append((gpu, p.pid, name, int((p.usedGpuMemory or 0) // 2**20)))
        out.append((gpu, -1, "free MiB", int(pynvml.nvmlDeviceGetMemoryInfo(h).free // 2**20)))
    return out


def _probe(name: str, config: dict, launches: list[str]) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(config, fh)
    plan = build_plan(config=fh.name, launch="\n".join(launches), live=True)
    ctx = Context(facts=collect_facts(), plan=plan)
    print(f"\n=== {name}: config {json.dumps(config)}")
    for line in launches:
        print(f"    launch: {line}")
    print(f"    layout: mode {ctx.layout.generation_mode}, generation GPUs "
          f"{ctx.layout.generation}, ranks {[(r.rank, r.gpu) for r in ctx.layout.ranks]}")
    t0 = time.monotonic()
    phases: list[tuple[float, str]] = []
    area = probe_area_with_phases(ctx, phases)
    print(f"    wall {time.monotonic() - t0:.1f} s")
    for at, phase in phases:
        print(f"    [{at:6.1f} s] {phase}")
    print(f"    summary: {area.summary}")
    for f in area.findings:
        print(f"    {f.severity.name:<7} {f.rule}: {f.message}")
    result = SEEN[-1]
    print(f"    timings: {result.timings}")
    print(f"    events: {result.events}")
    if result.status != "pass":
        for line in result.server.get("log_tail", "").splitlines()[-15:]:
            print(f"    server| {line[:300]}")
        for line in result.log_tail.splitlines()[-15:]:
            print(f"    trainer| {line[:300]}")
    print(f"    NVML after: {_nvml()}")


SEEN: list = []


def _capture() -> None:
    from envdoctor.probe.run import runner

    real = runner.run_probe

    def run(spec, on_phase=None):
        SEEN.append(real(spec, on_phase))
        return SEEN[-1]

    runner.run_probe = run


def probe_area_with_phases(ctx, phases):
    from envdoctor.commands import probe as cmd

    start = time.monotonic()
    real = cmd._progress

    def progress(enabled):
        return lambda p: phases.append((time.monotonic() - start, p))

    cmd._progress = progress
    cmd.sys.stderr.isatty = lambda: True  # type: ignore[method-assign]
    try:
        return probe_area(ctx, timeout=TIMEOUT, show_progress=True)
    finally:
        cmd._progress = real


def colocate(util: float = 0.3, batch: int = 4) -> None:
    _probe(f"colocate at {util}, {batch} per device", {"use_vllm": True, "vllm_mode": "colocate",
                                   "vllm_gpu_memory_utilization": util,
                                   "per_device_train_batch_size": batch, "num_generations": 4},
           [TRAINER])


def colocate_sleep() -> None:
    """Colocate with vLLM's sleep mode; run under PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF to
    see expandable segments with sleep mode in TRL's own step (docs/validation/sleep-alloc-h200.md)."""
    conf = {k: os.environ[k] for k in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF") if k in os.environ}
    _probe(f"colocate at 0.3 with sleep mode, env {conf}", {
        "use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3,
        "vllm_enable_sleep_mode": True, "per_device_train_batch_size": 4, "num_generations": 4},
        [TRAINER])


def server() -> None:
    _probe(f"server on GPU {SERVER_GPU}, trainer on GPU 0", {"use_vllm": True, "vllm_mode": "server",
                                         "per_device_train_batch_size": 4,
                                         "num_generations": 4}, [SERVER, TRAINER])


def taken() -> None:
    code = ("import torch,time,sys; free,total=torch.cuda.mem_get_info(); "
            "x=torch.empty(int(free-12*2**30),dtype=torch.uint8,device='cuda'); "
            "print('holding',x.numel()>>20,'MiB',flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code],
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": SERVER_GPU},
                              stdout=subprocess.PIPE, text=True)
    print(f"\nstand-in pid {holder.pid}: {holder.stdout.readline().strip()}")
    try:
        _probe("generation GPU mostly taken", {"use_vllm": True, "vllm_mode": "server",
                                               "per_device_train_batch_size": 4,
                                               "num_generations": 4}, [SERVER, TRAINER])
    finally:
        holder.kill()
        holder.wait()


def beside() -> None:
    model = write_tiny_model(Path(tempfile.mkdtemp()) / "user-model")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": SERVER_GPU}
    user = subprocess.Popen(["trl", "vllm-serve", "--model", str(model),
                             "--gpu_memory_utilization", "0.3", "--port", "8000",
                             "--enforce_eager", "true", "--max_model_len", "256"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    t0 = time.monotonic()
    while health("127.0.0.1", 8000) != 200 and time.monotonic() - t0 < 200:
        time.sleep(1)
    print(f"\nuser's server pid {user.pid}: /health {health('127.0.0.1', 8000)} after "
          f"{time.monotonic() - t0:.1f} s; NVML before: {_nvml()}")
    try:
        server()
        print(f"user's server after the probe: /health {health('127.0.0.1', 8000)}; "
              f"NVML: {_nvml()}")
    finally:
        os.killpg(user.pid, 15)
        user.wait(30)


if __name__ == "__main__":
    _capture()
    for arg in sys.argv[1:]:
        {"colocate": colocate, "colocate_greedy": lambda: colocate(0.99), "server": server,
         "colocate8": lambda: colocate(0.3, 8), "colocate_sleep": colocate_sleep, "colocate32": lambda: colocate(0.3, 32),
         "taken": taken, "beside": beside}[arg]()
