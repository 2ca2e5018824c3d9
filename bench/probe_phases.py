"""The probe's wall time per phase, as `envdoctor check --probe` runs it (a table, no asserts).

    python bench/probe_phases.py --config grpo.yaml [--runs 3] -- CUDA_VISIBLE_DEVICES=0 python train.py
    python bench/probe_phases.py --config grpo.yaml --launch 'CUDA_VISIBLE_DEVICES=1 trl vllm-serve …' \
        -- CUDA_VISIBLE_DEVICES=0 python train.py

Each run is the real CLI in a new process (`--format json`); the table gives every phase's
median over the runs (seconds) with min-max, and the status of each run. On a GPU node with vLLM
this measures the issue's targets (server split ≤ 90 s, colocate ≤ 75 s end to end); on a CPU
it measures the trainer's phases alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from envdoctor.probe.interface import PHASES

ORDER = tuple(PHASES)  # the report's order


def run_once(config: str, launches: list[str], launch_argv: list[str]) -> tuple[dict, float]:
    argv = [sys.executable, "-m", "envdoctor", "check", "--probe", "--config", config, "--format", "json"]
    for line in launches:
        argv += ["--launch", line]
    argv += ["--", *launch_argv]
    start = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
    wall = time.monotonic() - start
    try:
        probe = json.loads(out.stdout).get("probe") or {}
    except ValueError:
        probe = {"status": f"no JSON (exit {out.returncode}): {out.stderr[-300:]}"}
    return probe, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--launch", action="append", default=[])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("launch_argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    launch_argv = args.launch_argv[1:] if args.launch_argv[:1] == ["--"] else args.launch_argv
    rows: dict[str, list[float]] = {}
    statuses, walls = [], []
    for _ in range(max(args.runs, 1)):
        probe, wall = run_once(args.config, args.launch, launch_argv)
        statuses.append(str(probe.get("status")))
        walls.append(wall)
        for name, value in (probe.get("timings") or {}).items():
            if isinstance(value, (int, float)):
                rows.setdefault(name, []).append(float(value))
    print(f"{'phase':<16}{'median s':>10}{'min-max s':>16}")
    for name in [n for n in ORDER if n in rows] + [n for n in rows if n not in ORDER]:
        vals = rows[name]
        print(f"{name:<16}{statistics.median(vals):>10.1f}{f'{min(vals):.1f}-{max(vals):.1f}':>16}")
    print(f"{'CLI wall':<16}{statistics.median(walls):>10.1f}{f'{min(walls):.1f}-{max(walls):.1f}':>16}")
    print(f"\n{len(walls)} run(s); status: {', '.join(statuses)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
