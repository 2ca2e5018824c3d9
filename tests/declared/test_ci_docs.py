"""docs/ci.md's declared-stack examples run as written: a pre-commit config with the real
pre-commit (offline: a `language: system` hook) and the GitHub Actions SARIF job's steps."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from tests.declared.stack_repos import CONFIGS, OPEN_R1_PINS, committed_repo, requirements
from tests.declared.test_sarif import assert_sarif
from tests.integrations.helpers import git, pre_commit, run_workflow_steps, snippet

OLD_TORCH = requirements({**OPEN_R1_PINS, "torch": "2.5.1"})


def test_precommit_declared_snippet(tmp_path):
    config = snippet("ci.md", "precommit-declared")
    repo = committed_repo(
        tmp_path / "user",
        {
            ".pre-commit-config.yaml": config,
            "requirements.txt": requirements(OPEN_R1_PINS),
            "README.md": "# training\n",
        },
    )
    home = tmp_path / "pc-home"
    path = str(Path(sys.executable).parent)
    run = pre_commit("run", "--files", *CONFIGS, cwd=repo, home=home, path_first=path)
    assert run.returncode == 0 and "Passed" in run.stdout, run.stdout + run.stderr

    (repo / "requirements.txt").write_text(OLD_TORCH)
    git(repo, "add", "requirements.txt")
    only_stack = pre_commit("run", "--files", "requirements.txt", cwd=repo, home=home, path_first=path)
    out = " ".join(only_stack.stdout.split())
    assert only_stack.returncode == 1, out
    assert "vllm 0.8.5.post1 requires torch==2.6.0, declared torch 2.5.1" in out
    readme = pre_commit("run", "--files", "README.md", cwd=repo, home=home, path_first=path)
    assert readme.returncode == 0 and "no files to check" in readme.stdout.lower()


def test_github_actions_sarif_snippet(tmp_path):
    workflow = yaml.safe_load(snippet("ci.md", "github-actions-sarif"))
    assert workflow["permissions"]["security-events"] == "write"
    (job,) = workflow["jobs"].values()
    uses = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python", "github/codeql-action/upload-sarif"]
    upload = job["steps"][-1]
    assert upload["if"] == "always()" and upload["with"]["sarif_file"] == "envdoctor.sarif"

    bad = committed_repo(tmp_path / "bad", {"requirements.txt": OLD_TORCH})
    failed = run_workflow_steps(workflow, bad)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    log = json.loads((bad / "envdoctor.sarif").read_text())
    assert_sarif(log)
    (result,) = [r for r in log["runs"][0]["results"] if r["level"] != "note"]
    loc = result["locations"][0]["physicalLocation"]
    assert (result["ruleId"], loc["artifactLocation"]["uri"], loc["region"]["startLine"]) == (
        "PKG004",
        "requirements.txt",
        3,
    )

    good = committed_repo(tmp_path / "good", {"requirements.txt": requirements(OPEN_R1_PINS)})
    passed = run_workflow_steps(workflow, good)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    results = json.loads((good / "envdoctor.sarif").read_text())["runs"][0]["results"]
    assert {r["level"] for r in results} <= {"note"}
