"""ENV001 in the hook: a stack declared only as ranges is a declared stack (the DCL rules judge
it); declarations that name none of the stack say so, with a fix that fits a repository."""

from __future__ import annotations

from tests.conftest import run_cli
from tests.declared.stack_repos import LEGACY, committed_repo


def test_a_range_declared_stack_is_not_an_empty_one(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": "trl>=0.17\n", "legacy.yaml": LEGACY})
    out = run_cli("hook", "legacy.yaml", "requirements.txt", cwd=repo)
    # the open range is judged (DCL009: a fresh install resolves the newest TRL, which refuses vllm_device)
    assert "DCL009" in out.stdout and "ENV001" not in out.stdout, out.stdout


def test_declarations_without_the_stack_say_so(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": "numpy==2.1.0\n", "legacy.yaml": LEGACY})
    out = run_cli("hook", "legacy.yaml", cwd=repo)
    text = " ".join(out.stdout.split())
    assert "ENV001 no training stack declared" in text, text
    assert "--requirements FILE" in text and "inside the training environment" not in text
