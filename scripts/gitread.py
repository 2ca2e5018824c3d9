"""Read a git repository's objects for the maintainer scripts: one ``git --git-dir=DIR …`` call,
its output as text (undecodable bytes replaced: a release's file is read, never written back)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(git_dir: str | Path, *args: str) -> str:
    """The standard output of ``git --git-dir=git_dir args…``; a failing command raises."""
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True, text=True, errors="replace"
    )
    return out.stdout
