"""pytest's short test summary lines (``FAILED tests/t.py::test_x - ValueError: …``, ``ERROR …``,
xdist's ``[gw0]``) are read as failing exception lines: the node id is a prefix, not a frame, and
a message pytest cut to the terminal's width ("...") is a cut message."""

from __future__ import annotations

from envdoctor.triage.scanner import split_prefix
from tests.triage.helpers import findings, scan_bytes

SESSION = (
    "============================= test session starts ==============================\n"
    "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0\n"
    "collected 12 items\n\n"
    "tests/test_grpo.py ....F.......                                          [100%]\n\n"
    "=========================== short test summary info ============================\n"
)


def test_the_summary_prefix_is_split_off_with_the_node_id():
    line = "FAILED tests/test_grpo.py::GRPOTester::test_vllm[tp2] - ValueError: bad value"
    assert split_prefix(line)[0] == "ValueError: bad value"
    assert split_prefix("[gw3] ERROR tests/test_x.py - ModuleNotFoundError: No module named 'x'")[0] == (
        "ModuleNotFoundError: No module named 'x'"
    )
    # pytest's "..." cut: the message goes on
    assert split_prefix("FAILED tests/t.py::test_a - RuntimeError: the engine could not st...")[0] == (
        "RuntimeError: the engine could not st"
    )


def test_a_failed_line_with_a_missing_module_is_the_missing_module():
    log = (
        SESSION
        + "FAILED tests/test_grpo.py::test_training_vllm - ModuleNotFoundError: No module named 'vllm'\n"
    )
    log += "========================= 1 failed, 11 passed in 42.10s =========================\n"
    (f,) = findings(scan_bytes(log))
    assert f.rule == "TRI013" and "'vllm'" in f.message


def test_an_error_line_with_xdist_prefix_is_the_first_exception():
    log = (
        SESSION
        + "[gw1] ERROR tests/test_data.py::test_load - ValueError: the frobnicator refused the widget count\n"
    )
    (f,) = findings(scan_bytes(log))
    assert f.rule == "TRI003" and "ValueError: the frobnicator refused the widget count" in f.message


def test_quiet_on_passed_lines_and_a_test_named_error():
    log = SESSION.replace("....F.......", "............") + (
        "PASSED tests/test_a.py::test_error\n"
        "[gw0] [ 50%] PASSED tests/test_a.py::test_value_error_is_raised\n"
        "tests/test_a.py::test_error PASSED                                    [100%]\n"
        "============================== 12 passed in 3.10s ==============================\n"
    )
    assert findings(scan_bytes(log)) == []
    assert split_prefix("PASSED tests/test_a.py::test_error")[0] == "PASSED tests/test_a.py::test_error"
    # a FAILED line whose text after " - " is no exception (pytest's plain assert) keeps its prefix
    plain = "FAILED tests/t.py::test_a - assert 1 == 2"
    assert split_prefix(plain)[0] == plain


def test_real_log_skyrl_ci_summary_names_the_moved_vllm_module():
    """heldout-2026-11-28f/031 (settled: vLLM 0.16 split vllm.entrypoints.openai.protocol): two
    FAILED summary lines, nothing found before."""
    from pathlib import Path

    log = Path(__file__).resolve().parents[2] / "docs/validation/heldout-2026-11-28f/logs/031.log"
    (f,) = findings(scan_bytes(log.read_bytes()))
    assert f.rule == "TRI009" and "vllm.entrypoints.openai.protocol" in f.message
    assert "tests/backends" not in f.message.split("“")[0]  # the node id is no frame, no caller
