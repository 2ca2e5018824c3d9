"""Throughput of `envdoctor triage` on a large, messy, multi-rank GRPO log.

    python bench/triage_throughput.py [--size-mb 1024] [--repeat 1]

Writes a synthetic log to a temp file — 8 interleaved ranks, ANSI colours, tqdm carriage-return
redraws, vLLM engine logs, NCCL warnings, metrics, harmless warnings with tracebacks, and a few
real failures (an OOM every 256 MB, NCCL timeouts at the end) — then times the in-process scan
(scan + diagnose) and the whole CLI (a new `python -m envdoctor triage` process: interpreter start,
live facts, scan, report), prints MB/s as a table, and deletes the file. The file was just written,
so it is read from the page cache: the numbers are the scanner's, not the disk's.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

from envdoctor.triage.diagnose import diagnose
from envdoctor.triage.scanner import scan

MB = 1_000_000
OOM = ("[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {r} "
       "has a total capacity of 79.10 GiB of which 1.06 GiB is free. Including non-PyTorch memory, "
       "this process has 78.02 GiB memory in use. Of the allocated memory 74.10 GiB is allocated by "
       "PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated.\n")
TIMEOUT = ("[rank{r}]:[E1101 10:35:02.{r}1 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLGATHER, NumelIn=4, "
           "NumelOut=16, Timeout(ms)=1800000) ran for 1800042 milliseconds before timing out.\n")


def _block(rng: random.Random, lines: int = 4000) -> bytes:
    """About 1 MB of healthy output from 8 ranks, in random interleaving."""
    out = []
    for i in range(lines):
        r = rng.randrange(8)
        kind = rng.random()
        if kind < 0.3:
            bar = "".join(f"\r{p:3d}%|{'█' * (p // 10):<10}| {p}/100 [00:{p % 60:02d}<01:40, "
                          f"{rng.uniform(1, 9):.2f}it/s]" for p in range(0, 101, 20))
            out.append(f"Generating (rank {r}){bar}\n")
        elif kind < 0.55:
            out.append(f"\x1b[1;36m(EngineCore_DP0 pid={1000 + r})\x1b[0;0m \x1b[32mINFO\x1b[0m "
                       f"11-01 10:{i % 60:02d}:00 [gpu_model_runner.py:{i}] Graph capturing "
                       f"finished in {rng.uniform(1, 9):.1f} secs, took {rng.uniform(0, 2):.2f} GiB\n")
        elif kind < 0.8:
            out.append(f"[rank{r}]: {{'loss': {rng.uniform(0, 1):.4f}, 'grad_norm': "
                       f"{rng.uniform(0, 3):.3f}, 'reward': {rng.uniform(0, 1):.3f}, 'kl': "
                       f"{rng.uniform(0, .1):.4f}, 'completions/mean_length': "
                       f"{rng.uniform(50, 900):.1f}, 'epoch': {i / lines:.3f}}}\n")
        elif kind < 0.9:
            out.append(f"[rank{r}]:[W1101 10:00:{i % 60:02d}.{i:06d} ProcessGroupNCCL.cpp:4561] "
                       f"[PG ID 0 PG GUID 0 Rank {r}] using GPU {r} to perform barrier\n")
        elif kind < 0.97:
            out.append("/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:87: "
                       "UserWarning: None of the inputs have requires_grad=True. Gradients "
                       "will be None\n  warnings.warn(\n")
        else:
            out.append(f"[rank{r}]: Traceback (most recent call last):\n[rank{r}]:   File "
                       f'"/work/reward.py", line {i}, in score\n[rank{r}]: the error rate is '
                       f"{rng.uniform(0, 1):.3f} (logged, not raised)\n")
    return "".join(out).encode()


def write_log(path: str, size_mb: int) -> tuple[int, int]:
    """Write about ``size_mb`` MB; returns (bytes written, failures planted)."""
    rng = random.Random(0)
    blocks = [_block(rng) for _ in range(4)]
    target, written, planted, next_oom = size_mb * MB, 0, 0, 256 * MB
    with open(path, "wb") as fh:
        while written < target:
            data = blocks[rng.randrange(len(blocks))]
            fh.write(data)
            written += len(data)
            if written >= next_oom:
                line = OOM.format(r=planted % 8).encode()
                fh.write(line)
                written += len(line)
                planted += 1
                next_oom += 256 * MB
        tail = "".join(TIMEOUT.format(r=r) for r in range(8)).encode()
        fh.write(tail)
        written += len(tail)
    return written, planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="log size in MB (10^6 bytes)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement (best kept)")
    args = parser.parse_args()
    fd, path = tempfile.mkstemp(suffix=".log", prefix="envdoctor-triage-bench-")
    os.close(fd)
    try:
        t = time.perf_counter()
        size, planted = write_log(path, args.size_mb)
        print(f"wrote {size / MB:,.0f} MB in {time.perf_counter() - t:.1f} s "
              f"({planted} OOMs planted, 8 NCCL timeouts at the end)")
        rows = []
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            with open(path, "rb") as fh:
                result = scan(fh)
            found = diagnose(result.matches, None, counts=result.counts)
            best = min(best, time.perf_counter() - t)
        rows.append(("scan + diagnose (in-process)", best))
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "envdoctor", "triage", path,
                                   "--format", "json"], capture_output=True)
            best = min(best, time.perf_counter() - t)
        rows.append((f"envdoctor triage (CLI, exit {proc.returncode})", best))
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
        print(f"{result.lines:,} lines; counts {dict(sorted(result.counts.items()))}; "
              f"findings {[f.rule for f in found]}\n")
        print(f"{'what':<34} {'MB':>8} {'seconds':>8} {'MB/s':>8}")
        for what, seconds in rows:
            print(f"{what:<34} {size / MB:>8,.0f} {seconds:>8.2f} {size / MB / seconds:>8.0f}")
        print(f"\npeak memory of the CLI process: {rss:.0f} MiB")
        print(f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}; best of {args.repeat}")
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
