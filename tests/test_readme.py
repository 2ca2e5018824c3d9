"""The README's examples: console outputs are what envdoctor prints today, and each of the four
entry points' snippets runs as written (or is the same text as a tested one in docs/)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integrations.helpers import BAD_GRPO, GOOD_GRPO, git, snippet
from tests.readme_blocks import README, blocks, run

TEXT = README.read_text(encoding="utf-8")
GOOD_HERE = GOOD_GRPO.replace("use_vllm: true", "use_vllm: false")  # TRL here, no vLLM


@pytest.mark.parametrize("block", blocks(TEXT), ids=lambda b: b.splitlines()[-1][:60])
def test_console_output_is_current(block):
    assert run(block) == block, "README output is stale: python -m tests.readme_blocks"


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    return dict(env, NO_COLOR="1")


def test_terminal_snippet(tmp_path):
    (tmp_path / "grpo.yaml").write_text(GOOD_HERE)
    lines = snippet("../README.md", "terminal").strip().splitlines()
    assert len(lines) == 2
    static = subprocess.run(
        shlex.split(lines[0]), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert static.returncode in (0, 1) and "[✓] GRPO config (config file grpo.yaml" in static.stdout
    assert "[-] Probe — not run (add --probe)" in static.stdout
    probe = subprocess.run(
        shlex.split(lines[1]), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert "[✓] Probe (pass: 2 rank(s)" in probe.stdout, probe.stdout + probe.stderr
    assert "batch 4/rank × 1, 4 generations" in probe.stdout


def test_precommit_local_snippet(tmp_path):
    """The `repo: local` hook with the real pre-commit: no network, the envdoctor installed here."""
    config = yaml.safe_load(snippet("../README.md", "precommit-local"))
    repo = tmp_path / "user"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (repo / "configs").mkdir()
    (repo / "configs/grpo.yaml").write_text(GOOD_HERE)  # the package rules judge this env
    (repo / "configs/old.yaml").write_text(BAD_GRPO)
    git(repo, "add", ".")
    env = dict(_env(), PRE_COMMIT_HOME=str(tmp_path / "pc-home"))

    def pre_commit(*files: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--files", *files],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    bad = pre_commit("configs/grpo.yaml", "configs/old.yaml")
    assert bad.returncode == 1 and "CFG003" in bad.stdout, bad.stdout + bad.stderr
    good = pre_commit("configs/grpo.yaml")
    assert good.returncode == 0 and "Passed" in good.stdout, good.stdout + good.stderr


@pytest.mark.parametrize(
    ("name", "doc"),
    [
        ("preflight", "integrations.md"),
        ("precommit-local", "integrations.md"),
        ("torchrun-one-node", "cluster.md"),
    ],
)
def test_snippets_are_the_tested_ones_in_docs(name, doc):
    """tests/integrations/test_docs_snippets.py and tests/cluster/test_distributed.py run these."""
    assert snippet("../README.md", name) == snippet(doc, name)
