"""Where the probe's wall time goes, and how much memory it holds per GPU.

    python bench/probe_breakdown.py [--runs 3] [--timeout 180] [--launch "torchrun --nproc_per_node 2"]

The launch line is resolved like `envdoctor probe -- <launch> train.py` (default: this
interpreter, one process). Prints a table
per run: launch (runner start → first rank alive), imports, CUDA init, model build, trainer init,
step(s) (the slowest rank's), teardown (last rank done → every process ended), total; and the
peak MiB each GPU held for the probe's processes (NVML) or, without a GPU, the ranks' peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys

from envdoctor.checks.context import Context
from envdoctor.facts.collect import collect_facts
from envdoctor.plan.build import build_plan
from envdoctor.probe.plan.spec import spec_from_context
from envdoctor.probe.run.runner import run_probe

COLS = ["launch", "imports", "cuda_init", "model_build", "trainer_init", "steps", "teardown", "total"]


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
        rss = [d.get("peak_rss_mib") for d in r.ranks.values() if d.get("peak_rss_mib")]
        rows.append((i + 1, r.status, r.timings, r.peak_mib, max(rss, default=None), len(r.ranks)))
    print(f"probe: {' '.join(launcher)}")
    print(
        f"{'run':<4} {'status':<8} "
        + " ".join(f"{c:>12}" for c in COLS)
        + "  peak MiB per GPU (NVML) / peak RSS of a rank"
    )
    for i, status, row, peak, rss, _n in rows:
        cells = " ".join(f"{row[c]:>11.2f}s" if row.get(c) is not None else f"{'-':>12}" for c in COLS)
        gpus = ", ".join(f"GPU {g}: {m}" for g, m in sorted(peak.items()))
        mem = gpus or (f"CPU, RSS {rss:.0f} MiB" if rss else "n/a")
        print(f"{i:<4} {status:<8} {cells}  {mem}")
    med = {
        c: statistics.median(r[2][c] for r in rows if r[2].get(c) is not None)
        for c in COLS
        if any(r[2].get(c) is not None for r in rows)
    }
    print(f"{'med':<4} {'':<8} " + " ".join(f"{med.get(c, 0):>11.2f}s" for c in COLS))
    share = med.get("steps", 0) / med["total"] if med.get("total") else 0
    print(
        f"\nranks: {rows[0][5]}; the step is {share:.0%} of the total (phases are the slowest "
        f"rank's); peak RSS of any child process: "
        f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
