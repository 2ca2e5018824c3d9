"""A log whose crash no signature recognises is no tick: "[!] Triage", TRI003 a warning, exit 0
(1 is for a known failure), the summary line says so; the issue draft keeps the traceback's
indentation; SARIF locates each finding at its line of the log."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.triage.helpers import findings, scan_bytes

CRASH = """step 1
Traceback (most recent call last):
  File "/home/u/train.py", line 10, in <module>
    main()
  File "/home/u/.venv/lib/python3.11/site-packages/foo/bar.py", line 5, in main
    raise FooError("something odd happened")
foo.FooError: something odd happened
"""


def test_an_unrecognised_crash_is_a_warning_with_exit_0(tmp_path):
    (tmp_path / "train.log").write_text(CRASH)
    proc = run_cli("triage", "train.log", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "[!] Triage" in out and "[✓] Triage" not in out
    assert "! TRI003 no known failure recognised" in out
    assert "! a crash was found but not recognised: TRI003 names its first exception (line 7)" in out
    assert "✓ No issues found" not in out


def test_a_log_without_an_exception_keeps_its_tick(tmp_path):
    (tmp_path / "train.log").write_text("step 1\nstep 2\n")
    proc = run_cli("triage", "train.log", cwd=tmp_path)
    assert proc.returncode == 0 and "[✓] Triage" in proc.stdout
    assert "no known failure recognised, and no exception in the log" in proc.stdout


def test_the_issue_draft_keeps_the_tracebacks_indentation(tmp_path):
    (tmp_path / "train.log").write_text(CRASH)
    out = run_cli("triage", "train.log", cwd=tmp_path).stdout
    draft = out[out.index("### Traceback") :]
    assert '\n  File "/home/u/train.py", line 10, in <module>\n    main()\n' in draft
    assert '\n    raise FooError("something odd happened")\n' in draft


def test_triage_sarif_has_the_line_as_region(tmp_path):
    (tmp_path / "train.log").write_text(CRASH)
    log = json.loads(run_cli("triage", "train.log", "--format", "sarif", cwd=tmp_path).stdout)
    (result,) = log["runs"][0]["results"]
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "train.log" and loc["region"] == {"startLine": 7}
    assert result["level"] == "warning"


def test_the_message_of_a_warning_python_printed_is_not_a_failure(tmp_path):
    """`warnings.warn` prints `file.py:8: RuntimeWarning: Failed to read commit hash:` and the
    message's next line (`No module named 'vllm._version'`): nothing was raised, no finding; the
    same message raised in a traceback is still a failure."""
    warned = tmp_path / "warned.log"
    warned.write_text(
        "(pid=8) /env/lib/python3.10/site-packages/vllm/connections.py:8: RuntimeWarning: "
        "Failed to read commit hash:\n"
        "(pid=8) No module named 'vllm._version'\n"
        "(pid=8)   from vllm.version import __version__ as VLLM_VERSION\n"
    )
    out = json.loads(run_cli("triage", "--format", "json", str(warned)).stdout)
    assert out["findings"] == []
    raised = tmp_path / "raised.log"
    raised.write_text(
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.10/site-packages/foo/x.py", line 8, in <module>\n'
        "    import vllm._version\n"
        "ModuleNotFoundError: No module named 'vllm._version'\n"
    )
    out = json.loads(run_cli("triage", "--format", "json", str(raised)).stdout)
    assert out["findings"]


def test_a_line_a_logger_wrote_at_warning_level_is_no_crash():
    # vLLM logs its failed import of vllm._C as a warning and serves on (a plugin platform)
    log = (
        "WARNING 03-06 13:44:18 [_custom_ops.py:21] Failed to import from vllm._C with "
        "ModuleNotFoundError(\"No module named 'vllm._C'\")\n"
        "INFO 03-06 13:44:19 [api_server.py:1] vLLM API server version 0.8.1\n"
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
    )
    assert findings(scan_bytes(log)) == []


def test_exception_words_without_a_traceback_in_a_run_that_trains_on_are_no_crash():
    """A docstring's "Raises:" section or a model's generated text holds an exception's words; when
    the log then shows the run training to its end, nothing crashed it (no TRI003). The same words
    at the end of a log that stops there are still the first exception."""
    text = (
        "def matmul(A, B):\n"
        '    """Multiply.\n\n    Raises:\n'
        "        ValueError: If matrix dimensions are incompatible.\n"
        '    """\n'
        "{'loss': 0.0, 'grad_norm': 0.1, 'learning_rate': 1e-06, 'reward': 0.5, 'epoch': 0.1}\n"
        "TrainOutput(global_step=100, training_loss=3.8e-05, metrics={'train_runtime': 46507.4})\n"
    )
    assert findings(scan_bytes(text)) == []
    stops = "step 3\nValueError: If matrix dimensions are incompatible.\n"
    assert [f.rule for f in findings(scan_bytes(stops))] == ["TRI003"]
