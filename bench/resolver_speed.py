"""Time the package resolver (``envdoctor.checks.resolver.plan_packages``) on issue 35's stacks.

    python bench/resolver_speed.py [--runs 5]

Prints a table: the stack, the plan (or why nothing resolves), median wall and CPU time of one
plan on a fresh context (the knowledge tables and resolvelib already loaded: what a rule pays
once per check). A consistent stack never loads resolvelib; a broken one pays the search.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envdoctor.checks.context import Context  # noqa: E402
from envdoctor.checks.resolver import plan_packages  # noqa: E402
from envdoctor.facts.snapshot import from_dict  # noqa: E402
from envdoctor.plan.build import build_plan  # noqa: E402
from tests.conftest import snapshot  # noqa: E402

VLLM = {"use_vllm": True}
CASES: list[tuple[str, dict, dict, dict | None]] = [
    (
        "consistent (trl 1.16, vllm 0.30, torch 2.13)",
        {"trl": "1.16.0", "vllm": "0.30.0", "torch": "2.13.0", "transformers": "5.16.1"},
        VLLM,
        None,
    ),
    (
        "every package newest",
        {"trl": "1.16.0", "vllm": "0.33.0", "torch": "2.15.0", "transformers": "5.24.0"},
        VLLM,
        None,
    ),
    ("declared vllm 0.26 + torch 2.9", {"trl": "1.16.0", "vllm": "0.26.0", "torch": "2.9.0"}, VLLM, None),
    (
        "  … keeping torch 2.9.0",
        {"trl": "1.16.0", "vllm": "0.26.0", "torch": "2.9.0"},
        VLLM,
        {"torch": "==2.9.0"},
    ),
    (
        "trl 0.17 + vllm 0.7.3",
        {"trl": "0.17.0", "vllm": "0.7.3", "torch": "2.5.1", "transformers": "4.48.2"},
        VLLM,
        None,
    ),
    (
        "trl 0.25 + vllm 0.12",
        {"trl": "0.25.0", "vllm": "0.12.0", "torch": "2.9.0", "transformers": "4.57.0"},
        VLLM,
        None,
    ),
    ("vLLM missing (torch 2.11)", {"trl": "1.16.0", "torch": "2.11.0", "transformers": "5.23.0"}, VLLM, None),
    (
        "unfixable: keep torch 2.15",
        {"trl": "1.16.0", "torch": "2.15.0", "transformers": "5.24.0"},
        VLLM,
        {"torch": "==2.15.0"},
    ),
]


def _ctx(packages: dict, config: dict) -> Context:
    return Context(
        facts=from_dict(snapshot(2, packages=packages), "bench"),
        plan=build_plan(config_dict=config, live=False),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for name, packages, config, require in CASES:
        plan_packages(_ctx(packages, config), require)  # warm: tables parsed, resolvelib imported
        walls, cpus = [], []
        for _ in range(args.runs):
            ctx = _ctx(packages, config)
            w, c = time.perf_counter(), time.process_time()
            plan = plan_packages(ctx, require)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        said = plan.command or (
            f"unfixable: {plan.unfixable[:60]}…" if plan.unfixable else "(nothing to change)"
        )
        rows.append((name, said, statistics.median(walls) * 1000, statistics.median(cpus) * 1000))
    width = max(len(r[0]) for r in rows)
    plan_w = max(len(r[1]) for r in rows)
    print(f"{'stack':<{width}}  {'plan':<{plan_w}}  {'wall ms':>8}  {'cpu ms':>8}")
    for name, said, wall, cpu in rows:
        print(f"{name:<{width}}  {said:<{plan_w}}  {wall:8.1f}  {cpu:8.1f}")


if __name__ == "__main__":
    main()
