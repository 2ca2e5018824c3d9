#!/usr/bin/env python3
"""Export from a repository mirror, at one commit, only the files ``envdoctor hook`` reads, into
tests/gate/repos/<name>/ (the gate's suite of real repositories; tests/gate/test_gate_suite.py).

Maintainer script; not run in CI. Kept whole: config files (YAML/JSON under 64 KiB, outside
.github), declaration files (setup.py, setup.cfg, pyproject.toml, requirements*.txt, Dockerfile).
Trimmed: README / shell / Makefile / slurm files to their launch commands (``accelerate launch``,
``torchrun``; continuation lines kept), Python scripts those commands run to their ``trl`` import
lines. SOURCE.txt names the repository URL and commit.

Usage:
    python scripts/gate_suite_export.py --git-dir MIRROR --commit SHA --url URL --out tests/gate/repos/NAME
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import subprocess
from pathlib import Path

KEEP = (
    "*.yaml",
    "*.yml",
    "*.json",
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "requirements*.txt",
    "Dockerfile",
    "setup.sh",
    "install*.sh",
)
TRIM = ("README*.md", "*.sh", "*.slurm", "*.sbatch", "Makefile", "*.md")
#: folders of data and results, not of the training setup
SKIP_DIRS = {
    "data",
    "datasets",
    "logs",
    "outputs",
    "results",
    "eval_results",
    "completion_samples",
    "assets",
    "docs",
}
LAUNCH = re.compile(r"\b(accelerate\s+launch|torchrun|torch\.distributed\.run)\b")
TRL_IMPORT = re.compile(
    r"^\s*(from trl\b|import trl\b).*"
    r"|.*\b(GRPOConfig|GRPOTrainer|SFTConfig|SFTTrainer|DPOConfig|DPOTrainer)\b.*"
)


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True
    ).stdout


def trim_launches(text: str) -> str:
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        block = [lines[i]]
        while block[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            block.append(lines[i])
        if LAUNCH.search(" ".join(block)):
            out += block
        i += 1
    return "\n".join(out) + ("\n" if out else "")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-depth", type=int, default=5)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = git(args.git_dir, "ls-tree", "-r", "--name-only", args.commit).splitlines()
    scripts: set[str] = set()
    for name in names:
        parts = name.split("/")
        base = parts[-1]
        if name.startswith((".github/", ".")) or len(parts) > args.max_depth:
            continue
        keep, trim = any(fnmatch.fnmatch(base, p) for p in KEEP), any(fnmatch.fnmatch(base, p) for p in TRIM)
        if not (keep or trim) or any(p in SKIP_DIRS for p in parts[:-1]):
            continue
        try:
            size = int(git(args.git_dir, "cat-file", "-s", f"{args.commit}:{name}").strip())
        except subprocess.CalledProcessError:
            continue  # not in the snapshot (a large file left out)
        if keep and size < (16 if base.endswith(".json") else 64) * 1024:
            text = git(args.git_dir, "show", f"{args.commit}:{name}")
        elif trim and size < 512 * 1024:
            text = trim_launches(git(args.git_dir, "show", f"{args.commit}:{name}"))
            if not text:
                continue
            scripts |= set(re.findall(r"([\w./-]+\.py)\b", text))
        else:
            continue
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    for script in sorted(scripts):
        script = script.removeprefix("./")
        if script in names:
            text = git(args.git_dir, "show", f"{args.commit}:{script}")
            kept = [line for line in text.splitlines() if TRL_IMPORT.match(line)][:20]
            (out / script).parent.mkdir(parents=True, exist_ok=True)
            (out / script).write_text("# trimmed: the trl lines of the script\n" + "\n".join(kept) + "\n")
    (out / "SOURCE.txt").write_text(
        f"{args.url}/tree/{args.commit}\nexported by scripts/gate_suite_export.py\n"
    )


if __name__ == "__main__":
    main()
