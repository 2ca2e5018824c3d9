"""A value the training script writes as a literal in its own ``GRPOConfig(...)`` call
(``num_generations=1``) is what runs when the script reads no config file: ``fix`` names the
script's line and value, edits it, and the after-check reads the edited script (Legionof7/GRPOdx
0af1a61, held-out set 17: fix changed only the config file and left medical_grpo.py:411's
``num_generations=1``; alone, the script edit was written but `after` still read the old value)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import run_cli

TRL = ["--assume", "trl==0.15.2"]

SCRIPT = """\
from trl import GRPOConfig, GRPOTrainer

training_args = GRPOConfig(
    output_dir="o",
    per_device_train_batch_size=8,
    num_generations=1,
    max_completion_length=128,
)
GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=training_args).train()
"""

#: the same call in a script that hands its config file to TRL's parser: the file's value wins
PARSED = """\
from trl import GRPOConfig, GRPOTrainer, TrlParser

(training_args,) = TrlParser((GRPOConfig,)).parse_args_and_config()
other = GRPOConfig(output_dir="o", num_generations=1)
GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=training_args).train()
"""


def _fix(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli("fix", *TRL, *args, "--", "python", "train.py", cwd=tmp_path)


def _cfg003(report: dict) -> list:
    return [f for f in report["findings"] if f["rule"] == "CFG003"]


def test_a_literal_only_the_script_writes_is_fixed_and_proved_on_the_edited_copy(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    out = json.loads(_fix(tmp_path, "--format", "json").stdout)
    assert "CFG003" in out["fixed"] and _cfg003(out["before"]) and not _cfg003(out["after"])
    (edit,) = out["changes"]["files"]
    assert edit["path"] == "train.py" and edit["line"] == 6 and "num_generations=1" in edit["old"][0]
    assert "num_generations=8" in (tmp_path / "train.py").read_text()


def test_the_text_names_the_scripts_line_and_value(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    text = _fix(tmp_path).stdout
    assert "train.py changed: line 6 `num_generations=1` → `num_generations=8`" in text
    assert "→ 0 errors" in text


def test_a_config_file_beside_a_script_that_reads_none_gets_the_script_edited_too(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "config.yaml").write_text("num_generations: 1\nper_device_train_batch_size: 8\n")
    out = json.loads(_fix(tmp_path, "--config", "config.yaml", "--format", "json").stdout)
    assert not _cfg003(out["after"])
    assert "num_generations=8" in (tmp_path / "train.py").read_text()  # the value that runs
    assert "num_generations: 8" in (tmp_path / "config.yaml").read_text()


def test_a_script_that_hands_the_file_to_trls_parser_keeps_its_other_literal(tmp_path):
    (tmp_path / "train.py").write_text(PARSED)
    (tmp_path / "config.yaml").write_text(
        "output_dir: o\nnum_generations: 1\nper_device_train_batch_size: 8\n"
    )
    _fix(tmp_path, "--config", "config.yaml")
    assert "num_generations: 8" in (tmp_path / "config.yaml").read_text()
    assert "num_generations=1" in (tmp_path / "train.py").read_text()  # not the run's config


def test_a_script_literal_of_another_value_than_the_files_is_left_alone(tmp_path):
    """The script writes ``num_generations=8`` and reads no config file; the file beside it says 1:
    the literal is not the value judged, and no fix turns the script's 8 into 8, 4 or 2."""
    (tmp_path / "train.py").write_text(SCRIPT.replace("num_generations=1", "num_generations=8"))
    (tmp_path / "config.yaml").write_text("num_generations: 1\nper_device_train_batch_size: 8\n")
    before = (tmp_path / "train.py").read_text()
    text = _fix(tmp_path, "--config", "config.yaml", "--diff").stdout
    assert "train.py would change" not in text and "num_generations=4" not in text
    said = run_cli("check", *TRL, "--config", "config.yaml", "--", "python", "train.py", cwd=tmp_path)
    assert "and in the script:" not in said.stdout
    _fix(tmp_path, "--config", "config.yaml")
    assert (tmp_path / "train.py").read_text() == before
