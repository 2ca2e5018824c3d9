"""Where the wall time of a probe with vLLM goes (server, colocate), per phase.

    python bench/probe_vllm.py --config grpo.json --launch "CUDA_VISIBLE_DEVICES=0 trl vllm-serve
        --model M --gpu_memory_utilization 0.3" --launch "CUDA_VISIBLE_DEVICES=0 python train.py"

Prints one row per run: server start → /health (overlaps the trainer's imports: both start at
once), trainer launch, imports, CUDA init, model load, trainer init (TRL's client waiting for the
server, the NCCL group, or the in-process vLLM engine), weight sync, vLLM generation, step
(sync and generation included), teardown (trainer done → every process ended), total.
"""

from __future__ import annotations

import argparse

from envdoctor.checks.context import Context
from envdoctor.facts.collect import collect_facts
from envdoctor.plan.build import build_plan
from envdoctor.probe.interface import PHASES
from envdoctor.probe.plan.spec import spec_from_context
from envdoctor.probe.run.runner import run_probe

COLS = tuple(PHASES)  # the report's order


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--launch", action="append", required=True)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    ctx = Context(facts=collect_facts(), plan=build_plan(config=args.config, launch="\n".join(args.launch)))
    spec = spec_from_context(ctx, timeout_s=args.timeout)
    print(f"mode: {spec.vllm_mode or 'no vLLM'}; trainer: {' '.join(spec.launcher)}")
    print(f"{'run':<4} {'status':<8} " + " ".join(f"{c:>13}" for c in COLS))
    for i in range(args.runs):
        r = run_probe(spec)
        t = r.timings
        cells = " ".join(f"{t[c]:>12.1f}s" if t.get(c) is not None else f"{'-':>13}" for c in COLS)
        print(f"{i + 1:<4} {r.status:<8} {cells}")
        for f in r.findings:
            if f.severity.name != "INFO":
                print(f"     {f.rule}: {f.message[:200]}")


if __name__ == "__main__":
    main()
