"""Time `envdoctor check` (no probe) as a whole process against the stack's own env reporters.

    python bench/check_speed.py [--runs 15] [--only "envdoctor check" "trl env"]

Prints a table: median wall time, median CPU time (user + system: steadier than wall on a shared
machine), peak RSS of the process, and the wall ratio to envdoctor. The commands run in rounds,
one run of each per round, so that each sees the same load (the load average is printed). Each
command runs once first to warm the page cache and write its bytecode (PYTHONDONTWRITEBYTECODE is
dropped for the children: an installed package has its bytecode, a checkout writes it to the
git-ignored __pycache__). Commands that are not installed are reported as such.
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
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(argv: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", nargs="+", choices=list(COMMANDS), default=list(COMMANDS))
    args = parser.parse_args()
    present = {
        name: COMMANDS[name]
        for name in COMMANDS
        if name in args.only and (os.path.exists(COMMANDS[name][0]) or shutil.which(COMMANDS[name][0]))
    }
    for argv in present.values():
        run_once(argv)  # warm the page cache, write the bytecode
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in present}
    load = os.getloadavg()
    for _ in range(args.runs):
        for name, argv in present.items():
            samples[name].append(run_once(argv))
    load = tuple(max(a, b) for a, b in zip(load, os.getloadavg(), strict=True))
    base = (
        statistics.median(s[0] for s in samples["envdoctor check"]) if "envdoctor check" in samples else None
    )
    print(f"{'command':<36} {'median wall':>12} {'median CPU':>11} {'peak RSS':>10} {'× envdoctor':>12}")
    for name in args.only:
        if name not in present:
            print(f"{name:<36} {'not installed':>12}")
            continue
        wall = statistics.median(s[0] for s in samples[name])
        cpu = statistics.median(s[1] for s in samples[name])
        rss = max(s[2] for s in samples[name])
        ratio = f"{wall / base:>11.1f}×" if base else ""
        print(f"{name:<36} {wall:>10.3f} s {cpu:>9.3f} s {rss:>7.0f} MiB {ratio:>12}")
    print(
        f"\n{args.runs} rounds (one run of each command per round) after one warm-up; "
        f"{os.cpu_count()} CPUs; load average up to {load[0]:.1f} (1 min); Python "
        f"{sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
