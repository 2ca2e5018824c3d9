"""The hook as users run it: the real `pre-commit try-repo` against this repository.

pre-commit builds the hook's own virtualenv from the repository (pip installs envdoctor and
its dependencies, so it needs the package index): slow, hence the ``precommit`` marker; CI runs
it (`.ci/run` runs every test).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from envdoctor.commands.hook_stack import NOT_CHECKED
from tests.declared.stack_repos import CONFIGS, OPEN_R1_PINS, committed_repo, requirements
from tests.integrations.helpers import BAD_GRPO, GOOD_GRPO, git, pre_commit, user_repo

pytestmark = pytest.mark.precommit


def test_try_repo_fails_the_bad_config_and_passes_the_good(tmp_path, repo_snapshot):
    repo, _sha = repo_snapshot
    user = user_repo(
        tmp_path / "user",
        {
            "configs/good.yaml": GOOD_GRPO,
            "configs/bad.yaml": BAD_GRPO,
            ".github/workflows/ci.yml": "on: push\njobs: {}\n",
        },
    )
    run = pre_commit(
        "try-repo",
        str(repo),
        "envdoctor",
        "--files",
        "configs/good.yaml",
        "configs/bad.yaml",
        ".github/workflows/ci.yml",
        cwd=user,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "envdoctor (GRPO / accelerate configs)" in out and "Failed" in out
    good, bad = out.split("── configs/bad.yaml ──")
    assert "No issues found" in good
    assert "CFG003 num_generations is 1" in bad
    assert "ci.yml" not in out.split("Failed", 1)[1]
    # no declared stack in this repository: the configs alone, and it says the stack was not
    # checked (pre-commit's own environment, without TRL or vLLM, is not judged)
    assert "needs live GPU facts" in out and NOT_CHECKED[:60] in " ".join(out.split())
    assert "PKG" not in out

    ok = pre_commit("try-repo", str(repo), "envdoctor", "--files", "configs/good.yaml", cwd=user)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Passed" in ok.stdout


def test_try_repo_system_hook_checks_this_environments_packages(tmp_path, repo_snapshot):
    repo, _sha = repo_snapshot
    user = user_repo(tmp_path / "user", {"grpo.yaml": BAD_GRPO})
    run = pre_commit(
        "try-repo",
        str(repo),
        "envdoctor-system",
        "--files",
        "grpo.yaml",
        cwd=user,
        path_first=str(Path(sys.executable).parent),
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "CFG003" in out and "Packages (trl " in out and "Packages (trl —" not in out


def test_try_repo_judges_the_stack_the_repository_declares(tmp_path, repo_snapshot):
    """open-r1's pins and recipes pass; torch 2.5.1 under vLLM 0.8.5.post1 fails the commit,
    whether the commit touches the recipes or only requirements.txt."""
    repo, _sha = repo_snapshot
    user = committed_repo(tmp_path / "user", {"requirements.txt": requirements(OPEN_R1_PINS)})
    ok = pre_commit("try-repo", str(repo), "envdoctor", "--files", *CONFIGS, cwd=user)
    assert ok.returncode == 0 and "Passed" in ok.stdout, ok.stdout + ok.stderr

    (user / "requirements.txt").write_text(requirements({**OPEN_R1_PINS, "torch": "2.5.1"}))
    git(user, "add", "requirements.txt")
    for files in (CONFIGS, ("requirements.txt",)):
        bad = pre_commit("try-repo", str(repo), "envdoctor", "--files", *files, cwd=user)
        out = " ".join((bad.stdout + bad.stderr).split())
        assert bad.returncode == 1, out
        assert "vllm 0.8.5.post1 requires torch==2.6.0, declared torch 2.5.1" in out
        assert "require 'torch==2.6.0'" in out
