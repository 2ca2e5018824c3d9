"""Count the instructions of `envdoctor check` (no probe) as a whole process, under valgrind.

    python bench/check_instructions.py [--tree PATH ...]

A count of executed instructions (cachegrind's ``I refs``, no cache simulation) barely moves
with the load of a shared machine, where bench/check_speed.py's CPU seconds spread by tens of
percent: it compares two trees (``--tree``: a checkout or an unpacked ``git archive``; this
checkout by default) on a machine of two busy cores. Each tree's inputs are its own
``examples/seed-000`` (a snapshot of two A100s and its GRPO config); cases: an empty directory,
the tree's root (a repository), the snapshot (``--facts``), the snapshot with the config. Two
reference rows: the interpreter alone and ``import click`` (what no envdoctor change removes).
Each command runs once first, outside valgrind, to write its bytecode. Prints a table of
millions of instructions; valgrind runs each command about 30-50 times slower (~15 s a cell).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cases(tree: Path, empty: Path) -> dict[str, tuple[Path, list[str]]]:
    """Each case: the directory it runs in and the arguments after ``python``."""
    check = ["-m", "envdoctor", "check", "--no-network"]
    seed = tree / "examples" / "seed-000"
    return {
        "python -c pass": (empty, ["-c", "pass"]),
        "python -c 'import click'": (empty, ["-c", "import click"]),
        "check, empty directory": (empty, check),
        "check, its repository root": (tree, check),
        "check --facts SNAPSHOT": (empty, [*check, "--facts", str(seed / "facts.json")]),
        "check --facts SNAPSHOT --config": (
            empty,
            [*check, "--facts", str(seed / "facts.json"), "--config", str(seed / "grpo.yaml")],
        ),
    }


def instructions(tree: Path, cwd: Path, argv: list[str]) -> int | None:
    """The instructions one run of ``python argv`` executes (None when valgrind says none)."""
    env = {**ENV, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, timeout=300)
    proc = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        + [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    m = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    return int(m.group(1).replace(",", "")) if m else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", nargs="+", type=Path, default=[ROOT])
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    trees = [t.resolve() for t in args.tree]
    with tempfile.TemporaryDirectory() as empty:
        rows = {}
        for tree in trees:
            for name, (cwd, argv) in cases(tree, Path(empty)).items():
                rows.setdefault(name, []).append(instructions(tree, cwd, argv))
    labels = [t.name or str(t) for t in trees]
    print(f"{'millions of instructions':<34}" + "".join(f"{label[:14]:>16}" for label in labels))
    for name, counts in rows.items():
        cells = "".join(f"{(c / 1e6 if c else float('nan')):>16.1f}" for c in counts)
        change = ""
        if len(counts) > 1 and counts[0] and counts[-1]:
            change = f"   {100 * (counts[-1] - counts[0]) / counts[0]:+.1f} %"
        print(f"{name:<34}{cells}{change}")
    print(f"\nPython {sys.version.split()[0]}; valgrind cachegrind, I refs; last column: last tree vs first")


if __name__ == "__main__":
    main()
