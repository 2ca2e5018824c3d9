"""LAY026: a shell script the launch runs holds an unresolved git merge conflict. Set 26's GRPO-R1
setup committed `bin/run_grpo.sh` with the markers inside its `accelerate launch \\` command; GNU
bash stops at the first marker ("syntax error near unexpected token `<<<'", exit 2), whether it
sits inside a continued command or between two commands (test_bash_stops_at_the_first_marker)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from envdoctor.findings import Severity
from envdoctor.plan.shell_follow import merge_conflict
from tests.conftest import findings, snapshot

TRAIN = "from trl import GRPOConfig, GRPOTrainer\n"
INSIDE = """\
#!/bin/bash
GPU_NUM=2
echo "starting"
accelerate launch \\
<<<<<<< HEAD
    --config_file config/zero3.yaml \\
=======
    --config_file config/zero2.yaml \\
>>>>>>> f16cf0302edd7b3d22c38b863dea820eeedcbb3a
    --num_processes="${GPU_NUM}" train.py
"""
BETWEEN = """\
#!/bin/bash
<<<<<<< HEAD
export CUDA_VISIBLE_DEVICES=0,1
=======
export CUDA_VISIBLE_DEVICES=0,1,2,3
>>>>>>> feature
accelerate launch --num_processes 2 train.py
"""
#: a banner of '=' and text that merely mentions the markers: no conflict
CLEAN = """\
#!/bin/bash
echo "=======" ; echo "resolve <<<<<<< markers before committing"
# ======= training =======
accelerate launch --num_processes 2 train.py
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def _lay026(script: str, here) -> list:
    (here / "run.sh").write_text(script)
    return [f for f in findings(snapshot(2), launch="bash run.sh") if f.rule == "LAY026"]


@pytest.mark.parametrize(("script", "lines"), [(INSIDE, "5-9"), (BETWEEN, "2-6")])
def test_a_launch_script_holding_a_conflict_is_an_error_naming_its_lines(script, lines, here):
    (hit,) = _lay026(script, here)
    assert hit.severity is Severity.ERROR
    assert f"run.sh:{lines}" in hit.message and "never starts" in hit.message
    assert "git diff --check" in hit.fix


def test_a_clean_script_and_marker_words_in_text_stay_quiet(here):
    assert _lay026(CLEAN, here) == []
    assert merge_conflict("a\n<<<<<<< HEAD\nb\n") is None  # no ======= and >>>>>>> after it


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("script", [INSIDE, BETWEEN])
def test_bash_stops_at_the_first_marker(script, tmp_path):
    """What the rule says bash does, asked of this machine's bash (the launch replaced by echo)."""
    body = script.replace("accelerate launch", "echo LAUNCHED")
    (tmp_path / "run.sh").write_text(body)
    done = subprocess.run(["bash", "run.sh"], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "LAUNCHED" not in done.stdout
    assert "syntax error near unexpected token `<<<'" in done.stderr
