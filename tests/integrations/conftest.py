"""Fixtures of the integration tests (helpers live in ``helpers.py``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integrations.helpers import ROOT, FakeNvml, TinyRegression, git


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "precommit: runs the real pre-commit (builds a hook venv with pip; deselect with -m 'not precommit')",
    )
    config.addinivalue_line("markers", "distributed: starts several processes with torchrun")


@pytest.fixture(scope="session")
def repo_snapshot(tmp_path_factory) -> tuple[Path, str]:
    """This working tree (tracked and untracked-not-ignored files) committed to a new git
    repository: pre-commit clones hook repositories at a commit, and the work under test may
    not be committed yet."""
    dest = tmp_path_factory.mktemp("envdoctor-repo")
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in files:
        rel = raw.decode()
        src = ROOT / rel
        if rel and src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "snapshot")
    sha = git(dest, "rev-parse", "HEAD").strip()
    return dest, sha


@pytest.fixture
def fake_nvml() -> FakeNvml:
    return FakeNvml()


@pytest.fixture
def tiny() -> type[TinyRegression]:
    return TinyRegression
