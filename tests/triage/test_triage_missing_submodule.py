"""A missing submodule of an installed package, with the importing frames cut off: Python names
the first component that is missing, so ``No module named 'vllm.utils.argparse_utils'`` says vLLM
is installed and lacks that module: code written for another vLLM release (TRI009, as for
``cannot import name X from M``). A missing top-level package is an install matter, not drift."""

from __future__ import annotations

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes


def _run(text: str):
    return findings(scan_bytes(text.encode()))


def test_a_missing_submodule_without_frames_is_drift_with_the_package():
    (f,) = _run("ModuleNotFoundError: No module named 'vllm.utils.argparse_utils'\n")
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "vllm.utils.argparse_utils" in f.message and "the importing code (cut off in the log)" in f.message
    assert "pin the vllm release" in f.fix


def test_a_missing_package_is_not_drift():
    assert all(f.rule != "TRI009" for f in _run("ModuleNotFoundError: No module named 'vllm'\n"))
    assert all(f.rule != "TRI009" for f in _run("ModuleNotFoundError: No module named 'mypkg.sub'\n"))
