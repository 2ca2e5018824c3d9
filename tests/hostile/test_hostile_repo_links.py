"""A repository's files that are links out of it are not read by the hook (issue: hostile
input, round four). An ``-r`` include outside the repository was already refused, but a
committed ``requirements.txt -> ~/secret.txt`` (or ``Dockerfile``, ``README.md``, a training
script the commit names or the repository holds) was read through the link, and its lines quoted
in the report ("not a requirement, ignored: '…'", a script's ``GRPOConfig(...)`` call): in CI,
a pull request could print a file of the runner's into the log. Now such a file is said and
skipped (``facts.declared.links_out``; the scan of the repository's Python files follows no
link, as ``repo_walk`` already did)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from envdoctor.facts.declared import links_out
from tests.hostile.test_hostile_inputs import cli

CANARY = "CANARYfilecontent"


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text(f"my line {CANARY} here\n")
    (outside / "train.py").write_text(
        "from trl import GRPOConfig\n"
        f'c = GRPOConfig(num_generations=3, per_device_train_batch_size=4, output_dir="{CANARY}")\n'
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "grpo.yaml").write_text("per_device_train_batch_size: 3\nnum_generations: 8\n")
    return repo, outside


def test_declaration_files_linked_out_of_the_repository_are_not_read(tmp_path):
    repo, outside = _repo(tmp_path)
    (repo / "requirements.txt").symlink_to(outside / "notes.txt")
    (repo / "Dockerfile").symlink_to(outside / "notes.txt")
    (repo / "README.md").symlink_to(outside / "notes.txt")
    for fmt in ("text", "json", "sarif"):
        proc = cli(repo, "hook", "grpo.yaml", "-v", "--format", fmt)
        assert CANARY not in proc.stdout + proc.stderr, fmt
    proc = cli(repo, "hook", "grpo.yaml", "-v")
    assert "requirements.txt: a link to a file outside the repository; not read" in proc.stderr
    assert "Dockerfile: a link to a file outside the repository; not read" in proc.stderr
    # a link inside the repository is read as before
    (repo / "requirements.txt").unlink()
    (repo / "pins.txt").write_text("not-a-requirement line here\n")
    (repo / "requirements.txt").symlink_to("pins.txt")
    proc = cli(repo, "hook", "grpo.yaml", "-v")
    assert "not a requirement, ignored: 'not-a-requirement line here'" in proc.stderr


def test_scripts_linked_out_of_the_repository_are_not_read(tmp_path):
    repo, outside = _repo(tmp_path)
    (repo / "train.py").symlink_to(outside / "train.py")
    (repo / "launch.sh").symlink_to(outside / "notes.txt")
    for args in (("grpo.yaml",), ("grpo.yaml", "train.py", "launch.sh")):
        proc = cli(repo, "hook", *args, "-v")
        assert CANARY not in proc.stdout + proc.stderr, args
    assert "skipped train.py: a link to a file outside the repository" in proc.stderr


def test_links_out_names_only_files_of_the_repository_that_leave_it(tmp_path):
    repo, outside = _repo(tmp_path)
    (repo / "in.txt").symlink_to(repo / "grpo.yaml")
    (repo / "out.txt").symlink_to(outside / "notes.txt")
    (repo / "sub").symlink_to(outside)
    assert links_out(repo / "grpo.yaml", repo) is None
    assert links_out(repo / "in.txt", repo) is None
    assert links_out(repo / "out.txt", repo) == "out.txt: a link to a file outside the repository; not read"
    assert links_out(repo / "sub" / "notes.txt", repo) is not None
    assert links_out(outside / "notes.txt", repo) is None  # named outside it: the user's own file
