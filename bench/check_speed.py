"""Time `envdoctor check` (no probe) as a whole process against the stack's own env reporters.

    python bench/check_speed.py [--runs 7]

Prints a table: median wall time, peak RSS of the process, and the ratio to envdoctor.
Commands that are not installed are reported as such.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

BIN = os.path.dirname(sys.executable)
COMMANDS = {
    "envdoctor check": [sys.executable, "-m", "envdoctor", "check", "--no-network"],
    "trl env": [os.path.join(BIN, "trl"), "env"],
    "accelerate env": [os.path.join(BIN, "accelerate"), "env"],
    "python -m torch.utils.collect_env": [sys.executable, "-m", "torch.utils.collect_env"],
}


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rows = []
    for name, argv in COMMANDS.items():
        if not (os.path.exists(argv[0]) or shutil.which(argv[0])):
            rows.append((name, None, None))
            continue
        run_once(argv)  # warm the page cache
        samples = [run_once(argv) for _ in range(args.runs)]
        rows.append((name, statistics.median(s[0] for s in samples),
                     max(s[1] for s in samples)))
    base = rows[0][1]
    print(f"{'command':<36} {'median wall':>12} {'peak RSS':>10} {'× envdoctor':>12}")
    for name, wall, rss in rows:
        if wall is None:
            print(f"{name:<36} {'not installed':>12}")
            continue
        print(f"{name:<36} {wall:>10.3f} s {rss:>7.0f} MiB {wall / base:>11.1f}×")
    print(f"\n{args.runs} runs each after one warm-up; {os.cpu_count()} CPUs; Python "
          f"{sys.version.split()[0]}")


if __name__ == "__main__":
    main()
