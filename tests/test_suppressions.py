"""``[tool.envdoctor] ignore``: a suppression silences a rule or one finding, with a reason, and
the report says what was silenced and why (text with -v and the summary line, JSON, SARIF)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT, run_cli

SEED = ROOT / "examples" / "seed-000"
ARGS = ("check", "--facts", "facts.json", "--config", "grpo.yaml", "--", "python", "train.py")


@pytest.fixture
def seed(tmp_path):
    for name in ("facts.json", "grpo.yaml"):
        shutil.copy(SEED / name, tmp_path / name)
    (tmp_path / ".git").mkdir()  # the settings search stops here
    return tmp_path


def settings(folder, ignore: str) -> None:
    (folder / "pyproject.toml").write_text(f"[tool.envdoctor]\nignore = {ignore}\n")


def test_plain_string_is_listed_with_no_reason(seed):
    settings(seed, '["LAY003"]')
    text = run_cli(*ARGS, cwd=seed)
    assert text.returncode == 0, text.stdout + text.stderr
    last = text.stdout.strip().splitlines()[-1]
    assert "1 finding suppressed (LAY003: no reason given)" in last
    verbose = run_cli(*ARGS[:1], "-v", *ARGS[1:], cwd=seed).stdout
    assert "Suppressed ([tool.envdoctor] ignore" in verbose
    assert "suppressed by LAY003: no reason given" in verbose and "nn.DataParallel" in verbose
    data = json.loads(run_cli(*ARGS[:1], "--format", "json", *ARGS[1:], cwd=seed).stdout)
    assert data["summary"]["errors"] == 0 and data["summary"]["suppressed"] == 1
    (s,) = data["suppressed"]
    assert s["rule"] == "LAY003" and s["severity"] == "error" and s["area"] == "layout"
    assert s["suppression"]["reason"] == "no reason given" and s["suppression"]["rule"] == "LAY003"
    assert not any(f["rule"] == "LAY003" for f in data["findings"])


def test_reason_reaches_text_json_and_sarif(seed):
    settings(seed, '[{rule = "LAY003", reason = "train.py pins one GPU itself"}]')
    out = run_cli(*ARGS, cwd=seed).stdout
    assert "LAY003: train.py pins one GPU itself" in out
    sarif = json.loads(run_cli(*ARGS[:1], "--format", "sarif", *ARGS[1:], cwd=seed).stdout)
    (lay,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "LAY003"]
    (sup,) = lay["suppressions"]
    assert sup["kind"] == "external" and "train.py pins one GPU itself" in sup["justification"]


def test_one_finding_by_evidence_key(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "grpo.yaml").write_text(
        "num_generations: 4\nper_device_train_batch_size: 4\n"
        "learning_rat: 1e-6\nnum_train_epoch: 1\nmy_own_flag: 1\n"
    )
    args = ("check", "--format", "json", "--config", "grpo.yaml", "--assume", "trl==1.16.0")
    before = json.loads(run_cli(*args, cwd=tmp_path).stdout)
    keys = {f["evidence"].get("key") for f in before["findings"] if f["rule"] == "CFG004"}
    assert keys == {"learning_rat", "num_train_epoch", None}, keys
    settings(tmp_path, '[{rule = "CFG004", key = "num_train_epoch", reason = "our script reads it"}]')
    after = json.loads(run_cli(*args, cwd=tmp_path).stdout)
    kept = [f["evidence"].get("key") for f in after["findings"] if f["rule"] == "CFG004"]
    assert kept == ["learning_rat", None]
    (s,) = after["suppressed"]
    assert s["evidence"]["key"] == "num_train_epoch"
    assert s["suppression"] == {
        "rule": "CFG004",
        "reason": "our script reads it",
        "match": {"key": "num_train_epoch"},
        "source": s["suppression"]["source"],
    }


@pytest.mark.parametrize(
    ("ignore", "problem"),
    [
        ('[{reason = "x"}]', "needs rule"),
        ('[{rule = "LAY003", reason = 5}]', "reason must be a string"),
        ('[{rule = "LAY003", key = [1]}]', "key must be"),
        ('[{rule = "NOPE9"}]', "matches no rule"),
        ("[5]", "expected a rule id or a table"),
        ('"LAY003"', "wrong type"),
    ],
)
def test_bad_entries_are_input_errors(seed, ignore, problem):
    settings(seed, ignore)
    proc = run_cli(*ARGS, cwd=seed)
    assert proc.returncode == 2 and problem in proc.stderr and "pyproject.toml" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_list_in_the_evidence_matches_one_of_its_items(tmp_path):
    (tmp_path / ".git").mkdir()
    config = "num_generations: 4\nper_device_train_batch_size: 4\nmy_own_flag: 1\n"
    (tmp_path / "grpo.yaml").write_text(config)
    settings(tmp_path, '[{rule = "CFG004", key = "my_own_flag", reason = "parsed by our script"}]')
    args = ("check", "--format", "json", "--config", "grpo.yaml", "--assume", "trl==1.16.0")
    data = json.loads(run_cli(*args, cwd=tmp_path).stdout)
    assert not [f for f in data["findings"] if f["rule"] == "CFG004"]
    assert [s["evidence"]["keys"] for s in data["suppressed"]] == [["my_own_flag"]]
