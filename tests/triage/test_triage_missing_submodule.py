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
    # the release that added it, from the symbol history (rules/knowledge/symbols/vllm.json.gz)
    assert "pip install 'vllm>=0.11.1'" in f.fix and "update the importing code" in f.fix


def test_a_missing_package_is_not_drift():
    assert all(f.rule != "TRI009" for f in _run("ModuleNotFoundError: No module named 'vllm'\n"))
    assert all(f.rule != "TRI009" for f in _run("ModuleNotFoundError: No module named 'mypkg.sub'\n"))


def test_vllms_npu_plugin_is_a_package_of_the_stack():
    """vllm-project/vllm-ascend#1093 (TRL's import of the plugin's communicator on an NPU): a
    real case this was not written from; a plugin that is not installed at all stays no drift."""
    cut = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/envs/x/lib/python3.9/site-packages/trl/import_utils.py", line 144, in _get_module\n'
        '    return importlib.import_module("." + module_name, self.__name__)\n'
        "ModuleNotFoundError: No module named 'vllm_ascend.distributed.device_communicators'\n"
    )
    (f,) = _run(cut)
    assert f.rule == "TRI009" and "between trl and vllm-ascend" in f.message
    assert all(f.rule != "TRI009" for f in _run("ModuleNotFoundError: No module named 'vllm_ascend'\n"))
