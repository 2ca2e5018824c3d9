"""``envdoctor triage`` end to end, as users run it: formats, exit codes, stdin, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import A100_40, LEGACY, ROOT, run_cli, snapshot
from tests.triage.helpers import LOGS

OOM_LINE = (
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
    "has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n"
)


@pytest.fixture
def legacy_facts(write_json):
    return str(write_json(snapshot(4, A100_40, LEGACY)))


def test_json_with_facts_config_and_launch(tmp_path, legacy_facts):
    config = tmp_path / "grpo.yaml"
    config.write_text("use_vllm: true\nper_device_train_batch_size: 2\n")
    proc = run_cli(
        "triage",
        str(LOGS / "vllm_device_unavailable.log"),
        "--facts",
        legacy_facts,
        "--config",
        str(config),
        "--launch",
        "accelerate launch --num_processes 4 train.py",
        "--format",
        "json",
    )
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    (f,) = data["findings"]
    assert (f["rule"], f["area"], f["severity"]) == ("LAY002", "triage", "error")
    assert f["fix"] == "leave one GPU for vLLM: accelerate launch --num_processes 3 train.py"
    assert data["summary"]["exit_code"] == 1 and data["subject"].startswith("triage of ")
    (area,) = data["areas"]
    assert area["key"] == "triage" and "judged against snapshot" in area["summary"]
    assert {"LAY002", "TRI001", "TRI002", "PKG002"} <= set(area["ran"])


def test_text_is_the_default(legacy_facts):
    proc = run_cli("triage", str(LOGS / "oom_training.log"), "--facts", legacy_facts)
    assert proc.returncode == 1
    assert "[✗] Triage" in proc.stdout and "TRI001 CUDA out of memory on GPU 2" in proc.stdout
    assert "→ fix:" in proc.stdout and "envdoctor explain TRI001" in proc.stdout
    verbose = run_cli("triage", str(LOGS / "oom_training.log"), "--facts", legacy_facts, "-v")
    assert "cause: capacity" in verbose.stdout and "context:" in verbose.stdout


def test_junit(legacy_facts):
    proc = run_cli("triage", str(LOGS / "nccl_error.log"), "--facts", legacy_facts, "--format", "junit")
    assert proc.returncode == 1
    suite = ET.fromstring(proc.stdout).find("testsuite")
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["TRI002"] and int(suite.get("tests")) > 5


def test_output_file(tmp_path, legacy_facts):
    out = tmp_path / "report.json"
    proc = run_cli(
        "triage", str(LOGS / "batch_global.log"), "--facts", legacy_facts, "--format", "json", "-o", str(out)
    )
    assert proc.returncode == 1 and "✗ CFG002" in proc.stdout  # a data format to -o: the text too
    assert json.loads(out.read_text())["findings"][0]["rule"] == "CFG002"


def test_stdin(legacy_facts):
    proc = run_cli("triage", "-", "--facts", legacy_facts, stdin="starting\n" + OOM_LINE)
    assert proc.returncode == 1 and "triage of standard input" in proc.stdout
    clean = run_cli("triage", "-", "--facts", legacy_facts, stdin="all fine\n")
    assert clean.returncode == 0 and "no known failure recognised" in clean.stdout


def test_a_log_without_known_failures_exits_0(legacy_facts):
    proc = run_cli("triage", str(LOGS / "healthy.log"), "--facts", legacy_facts)
    assert proc.returncode == 0, proc.stdout
    assert "no known failure recognised" in proc.stdout and "No issues found" not in proc.stdout
    assert "versions: from snapshot" in proc.stdout and "the log shows none" in proc.stdout


def test_an_empty_log_is_said_to_be_empty_and_exits_2(tmp_path, legacy_facts):
    for content in ("", "\n\n  \n"):
        log = tmp_path / "empty.log"
        log.write_text(content)
        proc = run_cli("triage", str(log), "--facts", legacy_facts)
        assert proc.returncode == 2 and "is empty" in proc.stderr and "Traceback" not in proc.stderr


def test_no_known_failure_names_the_first_exception_its_library_the_versions_and_drafts_an_issue(
    tmp_path, legacy_facts
):
    log = tmp_path / "run.log"
    log.write_text(
        "- TRL version: 0.25.0\n- vLLM version: 0.12.0\nTraceback (most recent call last):\n"
        '  File "/venv/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py", line 88, '
        "in __init__\n    raise NotImplementedError\n> NotImplementedError\n"
    )
    proc = run_cli("triage", str(log), "--facts", legacy_facts)
    assert proc.returncode == 0 and "No issues found" not in proc.stdout
    assert "no known failure recognised; the first exception is at line 6" in proc.stdout
    assert "raised in trl (trl/trainer/grpo_trainer.py:88 in __init__)" in proc.stdout
    assert "versions: from the log (trl 0.25.0 (line 1), vllm 0.12.0 (line 2))" in proc.stdout
    assert "An issue draft to paste" in proc.stdout and "- trl 0.25.0 (log line 1)" in proc.stdout
    unknown = run_cli("triage", str(LOGS / "unknown_failure.log"), "--facts", legacy_facts)
    assert unknown.returncode == 0
    assert "first exception at line 5: TRI003" in unknown.stdout


def test_without_facts_the_live_machine_is_judged_and_said_so():
    proc = run_cli("triage", str(LOGS / "healthy.log"))
    assert proc.returncode == 0 and "judged against this machine's live facts" in proc.stdout


def test_non_utf8_log(tmp_path, legacy_facts):
    log = tmp_path / "latin1.log"
    log.write_bytes(b"\xff\xfe\x00 caf\xe9 \x1b[31m\n" + OOM_LINE.encode() + b"\xc3\x28\n")
    proc = run_cli("triage", str(log), "--facts", legacy_facts)
    assert proc.returncode == 1 and "TRI001" in proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda p: str(p / "missing.log"), "cannot read: No such file or directory"),
        (lambda p: str(p), "cannot read: Is a directory"),
    ],
)
def test_unreadable_input_exits_2(tmp_path, make, needle):
    proc = run_cli("triage", make(tmp_path))
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def test_bad_facts_or_config_exit_2(tmp_path):
    log = str(LOGS / "healthy.log")
    proc = run_cli("triage", log, "--facts", str(tmp_path / "none.json"))
    assert proc.returncode == 2 and "envdoctor: error:" in proc.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("use_vllm: [unclosed\n")
    proc = run_cli("triage", log, "--config", str(bad))
    assert proc.returncode == 2 and "envdoctor: error:" in proc.stderr


def test_the_triage_path_imports_no_training_stack():
    code = (
        "import sys\nfrom envdoctor.cli import main\n"
        f"sys.argv = ['envdoctor', 'triage', {str(LOGS / 'oom_training.log')!r}]\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('HEAVY', [m for m in ('torch', 'transformers', 'trl', 'vllm', 'accelerate', "
        "'datasets') if m in sys.modules])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr
