"""Every copy-paste example of docs/integrations.md (and docs/ci.md) runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.integrations.helpers import (
    BAD_GRPO,
    GOOD_GRPO,
    ROOT,
    pre_commit,
    run_workflow_steps,
    snippet,
    tiny_grpo,
    user_repo,
)

REPO_URL = "https://github.com/<owner>/envdoctor"
#: In this test environment TRL is installed and vLLM is not: a good config for it uses no vLLM
#: (the pre-commit test covers use_vllm in the hook's own environment, where TRL is absent).
GOOD_HERE = GOOD_GRPO.replace("use_vllm: true", "use_vllm: false")
NAMES = ("precommit-local", "precommit-config", "github-actions", "preflight", "callback")


def test_every_snippet_is_in_integrations_md_and_ci_md_agrees():
    text = (ROOT / "docs/integrations.md").read_text()
    assert set(re.findall(r"<!-- snippet: ([\w-]+) -->", text)) == set(NAMES)
    for name in ("precommit-local", "precommit-config", "github-actions"):
        assert snippet("ci.md", name) == snippet("integrations.md", name)


@pytest.mark.precommit
def test_precommit_config_snippet(tmp_path, repo_snapshot):
    repo, sha = repo_snapshot
    config = yaml.safe_load(snippet("integrations.md", "precommit-config"))
    (entry,) = config["repos"]
    assert entry["repo"] == REPO_URL and entry["hooks"][0]["id"] == "envdoctor"
    entry["repo"], entry["rev"] = str(repo), sha  # this working tree, committed
    user = user_repo(
        tmp_path / "user",
        {
            ".pre-commit-config.yaml": yaml.safe_dump(config),
            "configs/grpo.yaml": GOOD_GRPO,
            "configs/old.yaml": BAD_GRPO,
        },
    )
    home = tmp_path / "pre-commit-home"
    bad = pre_commit("run", "--files", "configs/grpo.yaml", "configs/old.yaml", cwd=user, home=home)
    assert bad.returncode == 1 and "CFG003" in bad.stdout, bad.stdout + bad.stderr
    good = pre_commit("run", "--files", "configs/grpo.yaml", cwd=user, home=home)
    assert good.returncode == 0 and "Passed" in good.stdout, good.stdout + good.stderr
    # and as a real commit: refused with the bad config staged, made without it
    user_git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), NO_COLOR="1")
    hooks = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"], cwd=user, env=env, capture_output=True, text=True
    )
    assert hooks.returncode == 0, hooks.stderr
    refused = subprocess.run(
        [*user_git, "commit", "-qm", "configs"], cwd=user, env=env, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "CFG003" in refused.stdout + refused.stderr
    subprocess.run(["git", "rm", "-q", "--cached", "configs/old.yaml"], cwd=user, check=True)
    made = subprocess.run(
        [*user_git, "commit", "-qm", "configs"], cwd=user, env=env, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stdout + made.stderr


def test_github_actions_snippet(tmp_path):
    workflow = yaml.safe_load(snippet("integrations.md", "github-actions"))
    (job,) = workflow["jobs"].values()
    uses = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python", "actions/upload-artifact"]
    upload = job["steps"][-1]
    assert upload["if"] == "always()" and upload["with"]["path"] == "envdoctor-junit.xml"
    install = next(s["run"] for s in job["steps"] if "pip install" in s.get("run", ""))
    assert REPO_URL in install

    bad = user_repo(
        tmp_path / "bad",
        {"configs/grpo.yaml": GOOD_HERE, "configs/old.yaml": BAD_GRPO, "ci.yml": "on: push\n"},
    )
    failed = run_workflow_steps(workflow, bad)
    assert failed.returncode == 1 and "CFG003" in failed.stdout, failed.stdout + failed.stderr
    junit = (bad / "envdoctor-junit.xml").read_text()
    assert 'name="envdoctor: configs/old.yaml"' in junit and "<failure" in junit

    good = user_repo(tmp_path / "good", {"configs/grpo.yaml": GOOD_HERE})
    passed = run_workflow_steps(workflow, good)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "<failure" not in (good / "envdoctor-junit.xml").read_text()


@pytest.mark.parametrize("config, code", [(GOOD_HERE, 0), (BAD_GRPO, 1)])
def test_preflight_snippet(tmp_path, config, code):
    (tmp_path / "grpo.yaml").write_text(config)
    (tmp_path / "train.py").write_text(snippet("integrations.md", "preflight"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_"))}
    run = subprocess.run(
        [sys.executable, "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(env, NO_COLOR="1"),
        timeout=120,
    )
    assert run.returncode == code, run.stdout + run.stderr
    if code:
        assert "CFG003 num_generations is 1" in run.stderr and "→ fix:" in run.stderr


def test_callback_snippet_with_a_real_grpo_trainer(tmp_path, capsys):
    namespace = tiny_grpo(tmp_path)
    exec(snippet("integrations.md", "callback"), namespace)  # noqa: S102 - our own doc
    assert namespace["trainer"].state.global_step == 1
    assert capsys.readouterr().out.count("envdoctor 0.1.0 — checking this machine") == 1
