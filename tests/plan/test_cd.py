"""One reading of ``cd`` for the launch parser and the repository's launch-script walk, and the
script reader's record of whether a script reads its command line (read once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.plan.cd import cd_target
from envdoctor.plan.launch import parse_launches
from envdoctor.plan.script_reader import read_script


@pytest.mark.parametrize(
    ("folder", "target", "went"),
    [
        ("", "scripts", "scripts"),
        ("scripts", "..", ""),
        ("", "../other", "../other"),
        ("a", "./b/", "a/b"),
        (None, "x", None),
        ("", "/abs", None),
        ("", "-", None),
        ("", "~/repo", None),
        ("", "$REPO", None),
        ("", "<repo_dir>", None),
        ("", "run_*", None),
        ("", None, None),
    ],
)
def test_cd_target(folder, target, went) -> None:
    assert cd_target(folder, target) == went


def test_launch_after_cd_names_files_from_the_start() -> None:
    (trainer,) = parse_launches("cd scripts && accelerate launch --config_file ../c.yaml train.py")
    assert trainer.options["config_file"] == "c.yaml" and trainer.script == "scripts/train.py"
    (trainer,) = parse_launches("cd $REPO && accelerate launch --config_file c.yaml train.py")
    assert trainer.options["config_file"] == "c.yaml"  # not followed: read as written


def test_reads_command_line_is_recorded_once(tmp_path: Path) -> None:
    (tmp_path / "cli.py").write_text("import argparse\nP = argparse.ArgumentParser()\n")
    (tmp_path / "train.py").write_text("import cli\nfrom trl import GRPOConfig\nGRPOConfig(beta=0.1)\n")
    (tmp_path / "plain.py").write_text("from trl import GRPOConfig\nGRPOConfig(beta=0.1)\n")
    assert read_script(tmp_path / "train.py").reads_command_line is True  # through the module it imports
    assert read_script(tmp_path / "plain.py").reads_command_line is False
    edited = "import sys\nfrom trl import GRPOConfig\nGRPOConfig(beta=float(sys.argv[1]))\n"
    assert read_script(tmp_path / "plain.py", edited).reads_command_line is True  # the text as edited
