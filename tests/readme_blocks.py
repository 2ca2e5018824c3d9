"""The README's ```console blocks: ``$ cd DIR`` and ``$ envdoctor …`` lines, then the output
and ``[exit N]``. ``python -m tests.readme_blocks`` rewrites the outputs from real runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"```console\n(.*?)```\n", re.S)


def commands(block: str) -> tuple[Path, list[str]]:
    """The folder and argv of a block's command (the last ``$`` line)."""
    cwd, argv = ROOT, []
    for line in block.splitlines():
        if line.startswith("$ cd "):
            cwd = ROOT / line[5:].strip()
        elif line.startswith("$ "):
            argv = shlex.split(line[2:])
    return cwd, argv


def run(block: str) -> str:
    """The block as it should read: its ``$`` lines, the real output and exit code."""
    cwd, argv = commands(block)
    assert argv and argv[0] == "envdoctor", block
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "envdoctor", *argv[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(env, NO_COLOR="1"),
        timeout=120,
    )
    head = [line for line in block.splitlines() if line.startswith("$ ")]
    return "\n".join(head) + "\n" + proc.stdout + f"[exit {proc.returncode}]\n"


def blocks(text: str) -> list[str]:
    return [m.group(1) for m in BLOCK.finditer(text)]


def update() -> None:
    text = README.read_text(encoding="utf-8")
    for block in blocks(text):
        text = text.replace(f"```console\n{block}```\n", f"```console\n{run(block)}```\n", 1)
    README.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    update()
