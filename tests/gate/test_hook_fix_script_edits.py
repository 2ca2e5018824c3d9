"""``envdoctor hook --fix`` writes the line edits ``fix`` proves for the training script a
config runs under (``changes.files``: a ``GRPOConfig(...)`` keyword TRL refuses, taken out of the
call), as it writes pins and config keys; never to a file outside the repository. A temporary git
repository, as pre-commit runs the hook."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import run_cli

SCRIPT = (
    "from trl import GRPOConfig\n"
    "cfg = GRPOConfig(\n"
    "    output_dir='o',\n"
    "    max_prompt_length=4096,  # prompts are long\n"
    "    beta=0.0,\n"
    ")\n"
)
GRPO = "beta: 0.0\nnum_generations: 4\nper_device_train_batch_size: 4\nlearning_rate: 1.0e-6\n"


def _repo(root: Path, script_at: str = "train.py") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "grpo.yaml").write_text(GRPO)
    (root / "requirements.txt").write_text("trl==1.2.0\n")
    script = root / script_at
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(SCRIPT)
    return root


def _hook(root: Path, *args: str, launch: str = "python train.py"):
    return run_cli("hook", *args, "--launch", launch, "grpo.yaml", cwd=root)


def test_hook_fix_writes_the_script_edit_and_the_hook_is_clean_after(tmp_path):
    root = _repo(tmp_path / "repo")
    before = _hook(root)
    assert before.returncode == 1 and "CFG001" in before.stdout
    shown = _hook(root, "--diff")
    assert "-    max_prompt_length=4096" in shown.stderr
    assert (root / "train.py").read_text() == SCRIPT  # --diff writes nothing
    done = _hook(root, "--fix")
    assert "fixed train.py (line edits (CFG001))" in done.stderr
    assert (root / "train.py").read_text() == SCRIPT.replace(
        "    max_prompt_length=4096,  # prompts are long\n", ""
    )
    assert (root / "grpo.yaml").read_text() == GRPO  # the config had nothing to fix
    again = _hook(root)
    assert again.returncode == 0 and "CFG001" not in again.stdout


def test_a_healthy_script_is_left_as_it_is(tmp_path):
    root = _repo(tmp_path / "repo")
    healthy = SCRIPT.replace("    max_prompt_length=4096,  # prompts are long\n", "")
    (root / "train.py").write_text(healthy)
    done = _hook(root, "--fix")
    assert done.returncode == 0 and "fixed" not in done.stderr
    assert (root / "train.py").read_text() == healthy


def test_a_script_outside_the_repository_is_never_written(tmp_path):
    outside = tmp_path / "shared" / "train.py"
    outside.parent.mkdir()
    outside.write_text(SCRIPT)
    root = _repo(tmp_path / "repo")
    done = _hook(root, "--fix", launch=f"python {outside}")
    assert outside.read_text() == SCRIPT
    assert "outside the repository" in done.stderr and done.returncode == 1
