"""Shared test helpers: build facts like a snapshot would, and run the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan

ROOT = Path(__file__).resolve().parent.parent

H100 = {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "compute_capability": "9.0"}
A100_40 = {"name": "NVIDIA A100-SXM4-40GB", "memory_total_mib": 40960, "compute_capability": "8.0"}
RTX3090 = {"name": "NVIDIA GeForce RTX 3090", "memory_total_mib": 24576, "compute_capability": "8.6"}
V100 = {"name": "Tesla V100-SXM2-32GB", "memory_total_mib": 32768, "compute_capability": "7.0"}

# A consistent stack: vLLM 0.30.0 pins torch 2.13.0 and transformers>=5.10.4.
MODERN = {
    "trl": "1.16.0",
    "transformers": "5.23.0",
    "torch": "2.13.0+cu128",
    "accelerate": "1.15.0",
    "vllm": "0.30.0",
}
LEGACY = {
    "trl": "0.15.2",
    "transformers": "4.49.0",
    "torch": "2.5.1+cu124",
    "accelerate": "1.4.0",
    "vllm": "0.7.3",
}


def snapshot(
    n_gpus: int = 2,
    model: dict | None = None,
    packages: dict | None = None,
    env: dict | None = None,
    used: dict[int, int] | None = None,
    processes: dict[int, list[dict]] | None = None,
    driver_cuda: str = "12.8",
    gpus: list[dict] | None = None,
    absent: list[str] | None = None,
) -> dict[str, Any]:
    """A snapshot dict in the documented format (as `envdoctor collect` writes it)."""
    model = model or H100
    used = used or {}
    processes = processes or {}
    if gpus is None:
        gpus = []
        for i in range(n_gpus):
            total = model["memory_total_mib"]
            u = used.get(i, 0)
            gpus.append(
                {
                    "index": i,
                    "uuid": f"GPU-{i:08x}-aaaa-bbbb-cccc-{i:012x}",
                    "name": model["name"],
                    "memory_total_mib": total,
                    "memory_used_mib": u,
                    "memory_free_mib": total - u,
                    "compute_capability": model["compute_capability"],
                    "mig": False,
                    "processes": processes.get(i, []),
                }
            )
    pkgs = packages if packages is not None else MODERN
    return {
        "schema": "envdoctor.facts/1",
        "python": "3.11.9",
        "platform": "Linux-x86_64",
        "driver": {"version": "570.86.15", "cuda": driver_cuda},
        "packages": {k: ({"version": v} if isinstance(v, str) else v) for k, v in pkgs.items()},
        "gpus": gpus,
        "env": env or {},
    } | ({"absent": absent} if absent else {})


def findings(
    snap: dict,
    config: dict | None = None,
    launch: str | None = None,
    select: list[str] | None = None,
    network: bool = False,
) -> list:
    facts = from_dict(snap, "test-snapshot")
    plan = build_plan(launch=launch, config_dict=config, live=False)
    ctx = Context(facts=facts, plan=plan, network=network)
    return run_rules(ctx, select=select).findings


def rules_fired(snap: dict, **kw) -> set[str]:
    return {f.rule for f in findings(snap, **kw)}


@pytest.fixture
def write_json(tmp_path):
    def write(data: Any, name: str = "facts.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(data))
        return path

    return write


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: dict | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """Run the real `envdoctor` as users do (a new process)."""
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_"))}
    full_env["NO_COLOR"] = "1"
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "envdoctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        input=stdin,
        timeout=timeout,
    )
