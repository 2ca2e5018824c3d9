"""TRI031 where only the symbol history knows the callee: a package's own frame calls its own class
with a keyword the installed release does not take (a dataclass's generated __init__, which no
frame index lists). Held-out set 25 (read after it was measured): vLLM 0.6.3's LLM() passing
num_scheduler_steps to an EngineArgs of another revision (a conda env with files of two vLLM
installs) drew TRI009 "API drift between your code and vllm"; the fix was a clean reinstall."""

from __future__ import annotations

from tests.triage.helpers import findings, scan_bytes

SITE = "/opt/conda/envs/rl/lib/python3.10/site-packages"
OWN = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/gen.py", line 8, in <module>\n'
    "    llm = LLM(model=path, max_num_seqs=64)\n"
    f'  File "{SITE}/vllm/entrypoints/llm.py", line 177, in __init__\n'
    "    engine_args = EngineArgs(\n"
    "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'num_scheduler_steps'\n"
)


def _top(log: str):
    got = [f for f in findings(scan_bytes(log)) if f.severity.value in ("error", "warning")]
    return got[0] if got else None


def test_the_packages_own_call_is_a_mixed_install_not_drift_with_your_code():
    f = _top(OWN)
    assert f is not None and f.rule == "TRI031" and f.severity.value == "error"
    assert "num_scheduler_steps=" in f.message and "your code" not in f.message
    assert "--force-reinstall" in f.fix


def test_the_users_own_call_stays_drift():
    log = OWN.replace(
        f'  File "{SITE}/vllm/entrypoints/llm.py", line 177, in __init__\n    engine_args = EngineArgs(\n', ""
    )
    log = log.replace(
        "llm = LLM(model=path, max_num_seqs=64)", "args = EngineArgs(model=path, num_scheduler_steps=8)"
    )
    f = _top(log)
    assert f is not None and f.rule == "TRI009"


def test_a_call_passing_on_keywords_is_not_the_packages_own():
    f = _top(OWN.replace("    engine_args = EngineArgs(\n", "    engine_args = EngineArgs(**kwargs)\n"))
    assert f is None or f.rule != "TRI031"


WIN = "C:\\Users\\dev\\AppData\\Local\\Programs\\Python\\Python312\\Lib"
OWN_IMPORT = (
    "Traceback (most recent call last):\n"
    '  File "C:\\Users\\dev\\grpo\\train.py", line 3, in <module>\n'
    "    from unsloth import FastLanguageModel\n"
    f'  File "{WIN}\\site-packages\\unsloth\\import_fixes.py", line 478, in fix_vllm_guided_decoding_params\n'
    "    from vllm.sampling_params import GuidedDecodingParams\n"
    f'  File "{WIN}\\site-packages\\vllm\\platforms\\cuda.py", line 18, in <module>\n'
    "    import vllm._C  # noqa\n"
    f'  File "{WIN}\\importlib\\__init__.py", line 90, in import_module\n'
    "    return _bootstrap._gcd_import(name[level:], package, level)\n"
    "ModuleNotFoundError: No module named 'vllm._C'\n"
)


def test_a_package_importing_its_own_module_through_windows_stdlib_is_no_drift():
    """vLLM's own code imports its compiled vllm._C (an install without it: no wheel for Windows).
    Python's importlib on a Windows path is Python's, not the user's code, and the importer is
    vLLM itself: no drift between the user's code (or unsloth) and vllm."""
    f = _top(OWN_IMPORT)
    assert f is None or f.rule != "TRI009"


def test_windows_stdlib_frames_are_pythons_own_and_user_files_stay_the_users():
    from envdoctor.triage.boundary import _user
    from envdoctor.triage.traceback_model import Frame

    lib = Frame(None, f"{WIN}\\importlib\\__init__.py", "importlib/__init__.py", "import_module", 90)
    mine = Frame(None, "C:\\Users\\dev\\grpo\\train.py", "train.py", "<module>", 3)
    assert lib.python_own and not _user(lib)
    assert _user(mine) and not mine.python_own
