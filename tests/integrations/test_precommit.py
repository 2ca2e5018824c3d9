"""The hook as users run it: the real `pre-commit try-repo` against this repository.

pre-commit builds the hook's own virtualenv from the repository (pip installs envdoctor and
its dependencies, so it needs the package index): slow, hence the ``precommit`` marker; CI runs
it (`.ci/run` runs every test).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from envdoctor.commands.hook import NO_TRL
from tests.integrations.helpers import BAD_GRPO, GOOD_GRPO, pre_commit, user_repo

pytestmark = pytest.mark.precommit


def test_try_repo_fails_the_bad_config_and_passes_the_good(tmp_path, repo_snapshot):
    repo, _sha = repo_snapshot
    user = user_repo(tmp_path / "user", {"configs/good.yaml": GOOD_GRPO,
                                         "configs/bad.yaml": BAD_GRPO,
                                         ".github/workflows/ci.yml": "on: push\njobs: {}\n"})
    run = pre_commit("try-repo", str(repo), "envdoctor", "--files", "configs/good.yaml",
                     "configs/bad.yaml", ".github/workflows/ci.yml", cwd=user)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "envdoctor (GRPO / accelerate configs)" in out and "Failed" in out
    good, bad = out.split("── configs/bad.yaml ──")
    assert "No issues found" in good
    assert "CFG003 num_generations is 1" in bad
    assert "ci.yml" not in out.split("Failed", 1)[1]
    # pre-commit's own environment has no TRL: no GPU, no package rules, and it says so
    assert "needs live GPU facts" in out and NO_TRL[:40] in " ".join(out.split())

    ok = pre_commit("try-repo", str(repo), "envdoctor", "--files", "configs/good.yaml", cwd=user)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Passed" in ok.stdout


def test_try_repo_system_hook_checks_this_environments_packages(tmp_path, repo_snapshot):
    repo, _sha = repo_snapshot
    user = user_repo(tmp_path / "user", {"grpo.yaml": BAD_GRPO})
    run = pre_commit("try-repo", str(repo), "envdoctor-system", "--files", "grpo.yaml",
                     cwd=user, path_first=str(Path(sys.executable).parent))
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "CFG003" in out and "Packages (trl " in out and "Packages (trl —" not in out
