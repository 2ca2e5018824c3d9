"""DCL007: a package of the training stack declared from a git branch (``@main``, or no ``@``)
installs whatever the branch holds that day; a commit, a tag or a lock file's entry is fixed."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.declared.stack_repos import CONFIGS, OPEN_R1_PINS, committed_repo, requirements

TRL_MAIN = "git+https://github.com/huggingface/trl.git"


def _dcl007(repo) -> str:
    out = run_cli("hook", *CONFIGS, "--select", "DCL007", cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    return " ".join(out.stdout.split())


@pytest.mark.parametrize(
    "line, branch",
    [
        (f"trl @ {TRL_MAIN}@main", "the branch `main`"),
        (f"trl @ {TRL_MAIN}", "the repository's default branch"),
        ("transformers @ git+https://github.com/huggingface/transformers.git@main", "the branch `main`"),
    ],
)
def test_a_branch_pin_is_a_warning_at_its_line(tmp_path, line, branch):
    pins = {k: v for k, v in OPEN_R1_PINS.items() if not k.startswith(("trl", "transformers"))}
    repo = committed_repo(tmp_path, {"requirements.txt": requirements(pins) + line + "\n"})
    text = _dcl007(repo)
    assert "DCL007" in text and branch in text and "requirements.txt:" in text
    assert "@<commit sha>" in text


@pytest.mark.parametrize(
    "line",
    [
        f"trl @ {TRL_MAIN}@69ad852e5654a77f1695eb4c608906fe0c7e8624",
        f"trl @ {TRL_MAIN}@v0.16.0",
        "math-verify @ git+https://github.com/huggingface/Math-Verify.git@main",  # not the stack
    ],
)
def test_a_commit_a_tag_or_a_package_outside_the_stack_is_quiet(tmp_path, line):
    pins = {k: v for k, v in OPEN_R1_PINS.items() if not k.startswith("trl")}
    repo = committed_repo(tmp_path, {"requirements.txt": requirements(pins) + line + "\n"})
    assert "DCL007" not in _dcl007(repo)


def test_said_once_whatever_the_number_of_configs(tmp_path):
    """The declared stack is every report's: its branch pin is said in the first report only."""
    import json

    from tests.declared.stack_repos import RECIPE

    pins = {k: v for k, v in OPEN_R1_PINS.items() if not k.startswith("trl")}
    repo = committed_repo(
        tmp_path,
        {
            "requirements.txt": requirements(pins) + f"trl @ {TRL_MAIN}@main\n",
            "recipes/other/config.yaml": RECIPE,
        },
    )
    out = run_cli("hook", "--format", "json", *CONFIGS, "recipes/other/config.yaml", cwd=repo)
    files = json.loads(out.stdout)["files"]
    assert len(files) >= 2
    said = [f for item in files for f in item["report"]["findings"] if f["rule"] == "DCL007"]
    assert len(said) == 1
