"""``fix`` and ``hook --fix`` write only the files they were given (issue: hostile input, round
four). Before, both opened the config with ``open(path, "wb")``: a config that is a symbolic link
(a committed ``configs/grpo.yaml -> ~/somewhere``) had the file it points at rewritten, outside
the repository. Now every write goes through ``remedy.file_edit.write_file``: never through a
link, never into a FIFO or a device, and for the hook never out of the repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envdoctor.errors import InputError
from envdoctor.remedy.file_edit import unwritable, write_file
from tests.conftest import ROOT
from tests.hostile.test_hostile_inputs import cli

FACTS = ROOT / "tests/conformance/setups/trl-0.19-colocate/facts.json"
#: 3 × 2 completions a step do not split into groups of 8: CFG002, fixed by num_generations: 6
CONFIG = "per_device_train_batch_size: 3\nnum_generations: 8\nuse_vllm: true\nvllm_mode: colocate\n"
LAUNCH = ["--", "accelerate", "launch", "--num_processes", "2", "train.py"]


def _outside(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    real = tmp_path / "outside" / "real.yaml"
    real.write_text(CONFIG)
    return real


def test_fix_does_not_write_through_a_link_to_another_file(tmp_path):
    real = _outside(tmp_path)
    (tmp_path / "work").mkdir()
    link = tmp_path / "work" / "grpo.yaml"
    link.symlink_to(real)
    proc = cli(tmp_path, "fix", "--facts", str(FACTS), "--config", str(link), *LAUNCH)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert str(link) in proc.stderr and "symbolic link" in proc.stderr
    assert real.read_text() == CONFIG and link.is_symlink()
    # --diff writes nothing: it still shows the change
    shown = cli(tmp_path, "fix", "--diff", "--facts", str(FACTS), "--config", str(link), *LAUNCH)
    assert shown.returncode == 0 and "+num_generations: 6" in shown.stdout
    # the file itself is fixed as before
    plain = tmp_path / "work" / "plain.yaml"
    plain.write_text(CONFIG)
    done = cli(tmp_path, "fix", "--facts", str(FACTS), "--config", str(plain), *LAUNCH)
    assert done.returncode == 0, done.stderr
    assert "num_generations: 6" in plain.read_text()


def test_hook_fix_does_not_write_a_committed_link_out_of_the_repository(tmp_path):
    real = _outside(tmp_path)
    repo = tmp_path / "repo"
    (repo / "configs").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "requirements.txt").write_text(
        "trl==0.19.1\nvllm==0.9.1\ntransformers==4.53.1\naccelerate==1.8.1\ntorch==2.7.0\n"
    )
    (repo / "configs" / "grpo.yaml").symlink_to(real)
    (repo / "configs" / "accelerate.yaml").write_text(
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\nnum_machines: 1\n"
    )
    proc = cli(repo, "hook", "--fix", "-v", "configs/grpo.yaml", "configs/accelerate.yaml")
    assert real.read_text() == CONFIG, "written through the link, outside the repository"
    assert "skipped configs/grpo.yaml: a link to a file outside the repository" in proc.stderr
    # a link inside the repository: read, and its fix said, not written through the link
    (repo / "configs" / "grpo.yaml").unlink()
    (repo / "real").mkdir()
    (repo / "real" / "grpo.yaml").write_text(CONFIG)
    (repo / "configs" / "grpo.yaml").symlink_to("../real/grpo.yaml")
    proc = cli(repo, "hook", "--fix", "configs/grpo.yaml", "configs/accelerate.yaml")
    assert (repo / "real" / "grpo.yaml").read_text() == CONFIG
    assert "not written: configs/grpo.yaml: a symbolic link (to ../real/grpo.yaml)" in proc.stderr
    assert proc.returncode == 1  # the finding stays: nothing was fixed


def test_write_file_refuses_links_fifos_and_paths_out_of_the_root(tmp_path):
    real = _outside(tmp_path)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    with pytest.raises(InputError, match="symbolic link"):
        write_file(link, "x: 1\n")
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "nowhere.yaml")
    with pytest.raises(InputError, match="symbolic link"):
        write_file(dangling, "x: 1\n")
    assert not (tmp_path / "nowhere.yaml").exists()
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        write_file(fifo, "x: 1\n")  # refused at once, never waiting for a reader
    # a folder of the repository linked out of it: the file's real path leaves the root
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "configs").symlink_to(tmp_path / "outside")
    assert unwritable(repo / "configs" / "real.yaml") is None
    assert "outside the repository" in (unwritable(repo / "configs" / "real.yaml", repo) or "")
    with pytest.raises(InputError, match="outside the repository"):
        write_file(repo / "configs" / "real.yaml", "x: 1\n", repo)
    assert real.read_text() == CONFIG
    # a regular file keeps its byte-order mark; a shorter text leaves nothing of the old one
    marked = tmp_path / "marked.yaml"
    marked.write_bytes("\ufeffa: 1\nb: 2\n".encode("utf-8-sig"))
    write_file(marked, "a: 1\n")
    assert marked.read_bytes() == "a: 1\n".encode("utf-8-sig")


def test_hook_fix_does_not_rewrite_a_hard_link_to_a_file_outside_the_repository(tmp_path):
    """A file rewritten in place rewrites every name it has: ``ln ../outside/real.yaml
    grpo.yaml`` in a checkout had ``hook --fix`` change the file outside the repository (the
    pnpm/pnpm#15050 case, held out: the symbolic-link mend did not cover it)."""
    real = _outside(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "requirements.txt").write_text(
        "trl==0.19.1\nvllm==0.9.1\ntransformers==4.53.1\naccelerate==1.8.1\ntorch==2.7.0\n"
    )
    os.link(real, repo / "grpo.yaml")
    proc = cli(repo, "hook", "--fix", "grpo.yaml", "--launch", "accelerate launch --num_processes 2 train.py")
    assert real.read_text() == CONFIG, "written in place through a hard link, outside the repository"
    assert "hard link" in proc.stderr and proc.returncode == 1
    assert "hard link" in (unwritable(repo / "grpo.yaml", repo) or "")
    assert unwritable(repo / "grpo.yaml") is None  # fix, given the file by its user: written
    with pytest.raises(InputError, match="hard link"):
        write_file(repo / "grpo.yaml", "x: 1\n", repo)
