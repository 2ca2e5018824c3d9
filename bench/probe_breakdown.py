"""Where the probe's wall time goes, and how much memory it holds per GPU.

    python bench/probe_breakdown.py [--runs 3] [--timeout 180] [--launch "torchrun --nproc_per_node 2"]

The launch line is resolved like `envdoctor probe -- <launch> train.py` (default: this
interpreter, one process). Prints a table
per run: launch (runner start → rank 0 alive), imports, CUDA init, model build, trainer init,
step(s), teardown (rank 0 done → every process ended), total; and the peak MiB each GPU held
for the probe's processes (NVML; "n/a" without a GPU) or the peak RSS on CPU.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys

from envdoctor.checks.context import Context
from envdoctor.facts.collect import collect_facts
from envdoctor.plan.build import build_plan
from envdoctor.probe.plan import spec_from_context
from envdoctor.probe.runner import run_probe

COLS = ["launch", "imports", "cuda_init", "model_build", "trainer_init", "steps", "teardown",
        "total"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--launch", default=f"{sys.executable} train.py")
    args = parser.parse_args()
    line = args.launch if args.launch.rstrip().endswith(".py") else args.launch + " train.py"
    ctx = Context(facts=collect_facts(), plan=build_plan(launch=line))
    spec = spec_from_context(ctx, timeout_s=args.timeout)
    launcher = spec.launcher
    rows = []
    for i in range(args.runs):
        r = run_probe(spec)
        rank0 = r.ranks.get(0, {})
        ph = rank0.get("phases", {})
        row = {k: ph.get(k) for k in COLS[1:6]}
        row["launch"] = rank0.get("t_start", r.t_start) - r.t_start
        row["teardown"] = r.t_end - rank0.get("t_end", r.t_end)
        row["total"] = r.wall_s
        rows.append((i + 1, r.status, row, r.peak_mib, len(r.ranks)))
    print(f"probe: {' '.join(launcher)}")
    print(f"{'run':<4} {'status':<8} " + " ".join(f"{c:>12}" for c in COLS) + "  peak MiB per GPU")
    for i, status, row, peak, _n in rows:
        cells = " ".join(f"{row[c]:>11.2f}s" if row[c] is not None else f"{'-':>12}"
                         for c in COLS)
        gpus = ", ".join(f"GPU {g}: {m}" for g, m in sorted(peak.items())) or "n/a"
        print(f"{i:<4} {status:<8} {cells}  {gpus}")
    med = {c: statistics.median(r[2][c] for r in rows if r[2][c] is not None) for c in COLS
           if any(r[2][c] is not None for r in rows)}
    print(f"{'med':<4} {'':<8} " + " ".join(f"{med.get(c, 0):>11.2f}s" for c in COLS))
    share = med.get("steps", 0) / med["total"] if med.get("total") else 0
    print(f"\nranks: {rows[0][4]}; the step is {share:.0%} of the total; peak RSS of any child "
          f"process: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
