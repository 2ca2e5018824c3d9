"""Throughput of `envdoctor triage` on a large, messy, multi-rank log.

    python bench/triage_throughput.py [--size-mb 1024]

Writes a synthetic log (ANSI colours, tqdm carriage-return progress, interleaved ranks, metrics
lines, a few real failures) to a temp file, then times the in-process scan and the whole CLI,
prints MB/s as a table, and deletes the file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from envdoctor.triage.scanner import scan

BLOCK = "".join(
    f"\x1b[32m[rank{r}]\x1b[0m {{'loss': 0.{r}31, 'reward': 0.52, 'kl': 0.001, 'step': {r}}}\n"
    f"Generating:  {r * 7}%|███▊      | {r * 7}/100 [00:0{r}<00:12,  8.1it/s]\r"
    f"[rank{r}]: INFO trainer.py:1234 >> step done, completions/mean_length=212.5\n"
    for r in range(8)
).encode()
FAILURE = (b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 "
           b"has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n")


def write_log(path: str, size_mb: int) -> int:
    target = size_mb * 1024 * 1024
    chunk = BLOCK * max(1, (4 * 1024 * 1024) // len(BLOCK))
    written = 0
    with open(path, "wb") as fh:
        while written < target:
            fh.write(chunk)
            written += len(chunk)
            if written % (256 * 1024 * 1024) < len(chunk):
                fh.write(FAILURE)
                written += len(FAILURE)
    return written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    args = parser.parse_args()
    fd, path = tempfile.mkstemp(suffix=".log")
    os.close(fd)
    try:
        size = write_log(path, args.size_mb)
        with open(path, "rb") as fh:
            t = time.perf_counter()
            result = scan(fh)
            scan_s = time.perf_counter() - t
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "envdoctor", "triage", path, "--format",
                               "json"], capture_output=True)
        cli_s = time.perf_counter() - t
        mb = size / 1e6
        print(f"log: {mb:.0f} MB, {result.lines:,} lines, {sum(result.counts.values())} failure "
              f"lines found")
        print(f"{'what':<28} {'seconds':>8} {'MB/s':>8}")
        print(f"{'scan (in-process)':<28} {scan_s:>8.2f} {mb / scan_s:>8.0f}")
        print(f"{'envdoctor triage (CLI)':<28} {cli_s:>8.2f} {mb / cli_s:>8.0f}   "
              f"(exit {proc.returncode})")
        print(f"\n{os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
