"""The CLI as users run it: formats, exit codes, selection, rule docs, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from envdoctor.checks.docs import rule_docs
from tests.conftest import LEGACY, ROOT, run_cli, snapshot

BROKEN = snapshot(2, packages=LEGACY)


def _facts(write_json, snap=BROKEN):
    return str(write_json(snap))


def test_text_report_flutter_style(write_json):
    proc = run_cli("check", "--facts", _facts(write_json), "--", "python", "train.py")
    assert proc.returncode == 1
    out = proc.stdout
    assert "[✗] GPU layout" in out and "✗ LAY003" in out and "→ fix:" in out
    assert "GPU  MODEL" in out and "rank 0" in out
    assert "envdoctor found 1 error" in out and "\033[" not in out


def test_json_report_matches_schema(write_json):
    proc = run_cli("check", "--facts", _facts(write_json), "--format", "json", "--",
                   "python", "train.py")
    data = json.loads(proc.stdout)
    assert data["schema"] == "envdoctor.report/1"
    assert data["summary"]["errors"] >= 1 and data["summary"]["exit_code"] == 1
    for f in data["findings"]:
        assert set(f) >= {"rule", "severity", "message", "fix", "evidence", "area"}
        assert f["severity"] in ("error", "warning", "info") and f["fix"]
    assert {a["key"] for a in data["areas"]} == {"packages", "config", "gpus", "layout",
                                                 "allocator", "probe"}


def test_junit_is_valid_xml(write_json, tmp_path):
    out = tmp_path / "r.xml"
    proc = run_cli("check", "--facts", _facts(write_json), "--format", "junit", "-o", str(out),
                   "--", "python", "train.py")
    assert proc.returncode == 1 and proc.stdout == ""
    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    assert int(suite.get("failures")) >= 1
    names = {c.get("name") for c in suite.iter("testcase")}
    assert "LAY003" in names


def test_exit_codes_and_strict(write_json):
    clean = _facts(write_json, snapshot(2))
    assert run_cli("check", "--facts", clean).returncode == 0
    warn = write_json(snapshot(2, env={"PYTORCH_CUDA_ALLOC_CONF": "a:1",
                                        "PYTORCH_ALLOC_CONF": "expandable_segments:True"}),
                      "w.json")
    assert run_cli("check", "--facts", str(warn), "--ignore", "ALC001").returncode == 0
    assert run_cli("check", "--facts", str(warn), "--ignore", "ALC001",
                   "--strict").returncode == 1


def test_select_and_ignore(write_json):
    facts = _facts(write_json)
    sel = run_cli("check", "--facts", facts, "--select", "ALC", "--", "python", "train.py")
    assert sel.returncode == 0 and "LAY003" not in sel.stdout
    ign = run_cli("check", "--facts", facts, "--ignore", "dataparallel-trap", "--",
                  "python", "train.py")
    assert ign.returncode == 0


def test_pyproject_settings(write_json, tmp_path):
    facts = _facts(write_json)
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nignore = ["LAY003"]\n')
    assert run_cli("check", "--facts", facts, "--", "python", "train.py",
                   cwd=tmp_path).returncode == 0
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nignroe = ["LAY003"]\n')
    bad = run_cli("check", "--facts", facts, cwd=tmp_path)
    assert bad.returncode == 2 and "unknown key 'ignroe'" in bad.stderr


def test_rules_and_explain():
    listing = run_cli("rules")
    assert listing.returncode == 0
    assert len(listing.stdout.splitlines()) == len(rule_docs())
    one = run_cli("explain", "LAY003")
    assert "DataParallel" in one.stdout and "References:" in one.stdout
    assert run_cli("explain", "dataparallel-trap").returncode == 0
    missing = run_cli("explain", "NOPE1")
    assert missing.returncode == 2 and "envdoctor rules" in missing.stderr


@pytest.mark.parametrize("args, needle", [
    (["check", "--config", "/nonexistent.yaml"], "cannot read"),
    (["check", "--format", "xml"], "Invalid value"),
    (["check", "--", "accelerate", "launch", "'train.py"], None),
    (["check", "--launch", "accelerate launch 'train.py"], "launch command"),
])
def test_bad_usage_exit_2(args, needle):
    proc = run_cli(*args)
    if needle is None:  # the shell already split it: a literal quote is just a file name
        assert proc.returncode in (0, 1)
        return
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("content, needle", [
    ("a: [1, 2\n", "invalid YAML at line"),
    ("- 1\n- 2\n", "expected a mapping"),
    ("{1: 2}", "keys must be strings"),
])
def test_malformed_config(tmp_path, content, needle):
    path = tmp_path / "grpo.yaml"
    path.write_text(content)
    proc = run_cli("check", "--config", str(path))
    assert proc.returncode == 2 and needle in proc.stderr and str(path) in proc.stderr


def test_yaml_is_loaded_safely(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("a: !!python/object/apply:os.system ['echo pwned']\n")
    proc = run_cli("check", "--config", str(path))
    assert proc.returncode == 2 and "pwned" not in proc.stdout


def test_upgrade_plan(write_json):
    snap = snapshot(2, packages={"trl": "0.15.2", "torch": "2.7.0+cu126", "vllm": {
        "version": "0.8.5", "requires": ["torch==2.6.0"]}})
    proc = run_cli("check", "--facts", str(write_json(snap)), "--upgrade-plan")
    assert proc.returncode == 0 and proc.stdout.strip() == "pip install 'torch==2.6.0'"


def test_no_heavy_imports():
    code = ("import sys, envdoctor\n"
            "from envdoctor.cli import main\n"
            "try:\n    main(['check', '--no-network'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('torch', 'transformers', 'trl', 'vllm', 'accelerate',"
            " 'datasets') if m in sys.modules]\n"
            "print('HEAVY', heavy)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("rule_id", sorted(d.id for d in rule_docs().values()
                                           if d.area in ("packages", "config")))
def test_explain_shows_the_sources_of_every_version_rule(rule_id):
    out = run_cli("explain", rule_id).stdout
    refs = out.split("References:")[1].strip().splitlines()
    assert refs and all(line.strip().startswith("- ") for line in refs)
