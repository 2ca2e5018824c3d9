"""TOML files holding an integer of more than 4,300 digits (issue: hostile input, round four).
``tomllib`` converts integers itself and raises Python's ``ValueError`` for one past the
integer-string limit: ``check`` in a folder whose pyproject.toml held one (in any table, even
one envdoctor never reads) and ``hook`` on such a uv.lock stopped with "internal error:
ValueError". Now ``settings.parse_toml``, the one TOML reader, names the file (exit 2)."""

from __future__ import annotations

import subprocess

import pytest

from envdoctor.errors import InputError
from envdoctor.settings import parse_toml
from tests.hostile.test_hostile_inputs import cli

HUGE = "1" * 5000


@pytest.mark.parametrize("number", [HUGE, "+" + HUGE, "-" + HUGE])
def test_parse_toml_names_the_file_for_a_number_past_the_limit(number):
    with pytest.raises(InputError, match=r"conf\.toml: invalid TOML: a number of more than 4,300 digits"):
        parse_toml(f"[tool.other]\nx = {number}\n", "conf.toml")


def test_check_and_hook_exit_2_naming_the_toml_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "x"\nversion = "1"\n[tool.other]\nx = {HUGE}\n'
    )
    for args in (("check", "--no-network"), ("hook",)):
        proc = cli(tmp_path, *args)
        assert proc.returncode == 2, proc.stderr
        assert "pyproject.toml" in proc.stderr and "4,300 digits" in proc.stderr, proc.stderr
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "grpo.yaml").write_text("num_generations: 8\n")
    (repo / "uv.lock").write_text(
        f'version = 1\n[[package]]\nname = "trl"\nversion = "0.19.1"\nsize = {HUGE}\n'
    )
    proc = cli(repo, "hook", "grpo.yaml")
    assert proc.returncode == 2, proc.stderr
    assert "uv.lock" in proc.stderr and "4,300 digits" in proc.stderr, proc.stderr
