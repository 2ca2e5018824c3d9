# ruff: noqa: E501 - log lines are quoted as programs print them
"""Classes of failure by a traceback's structure (structclass.py, TRI029 / TRI014 / TRI024; TRI009 for
a torch config option; the NumPy ABI catalogue entries): each fires on its shape and stays quiet on
a near-miss in the user's code. The texts are synthetic, written in the grammar Python prints."""

from __future__ import annotations

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes


def _all(text: str):
    return findings(scan_bytes(text))


def _rules(text: str) -> list[tuple[str, str]]:
    return [(f.rule, f.severity.value) for f in _all(text)]


PY604 = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    from trl import GRPOTrainer
  File "/opt/conda/lib/python3.9/site-packages/trl/__init__.py", line 20, in <module>
    from .trainer import GRPOTrainer
  File "/opt/conda/lib/python3.9/site-packages/trl/trainer/grpo_trainer.py", line 48, in <module>
    class RepeatSampler:
  File "/opt/conda/lib/python3.9/site-packages/trl/trainer/grpo_trainer.py", line 60, in RepeatSampler
    def __init__(self, data_source, mini_repeat_count: int, seed: int | None = None):
TypeError: unsupported operand type(s) for |: 'type' and 'NoneType'
"""

PY585 = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    import vllm
  File "/usr/lib/python3.8/site-packages/vllm/__init__.py", line 3, in <module>
    from vllm.engine.arg_utils import AsyncEngineArgs, EngineArgs
  File "/usr/lib/python3.8/site-packages/vllm/engine/arg_utils.py", line 11, in <module>
    def _parse(x: list[str]) -> dict[str, int]:
TypeError: 'type' object is not subscriptable
"""

PYMATCH = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    import transformers
  File "/home/u/.venv/lib/python3.9/site-packages/transformers/__init__.py", line 26, in <module>
    from . import dependency_versions_check
  File "/home/u/.venv/lib/python3.9/site-packages/transformers/utils/generic.py", line 120
    match value:
          ^
SyntaxError: invalid syntax
"""

PYUSER = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 10, in <module>
    def reward(x: list[str]) -> float:
TypeError: 'type' object is not subscriptable
"""

NAMEERR = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 30, in <module>
    trainer.train()
  File "/usr/local/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1200, in _generate_and_score_completions
    prompt_ids = unwrap_model_for_generation(prompts)
NameError: name 'unwrap_model_for_generation' is not defined
"""

UNSLOTHGEN = """\
==((====))==  Unsloth 2025.6.1: Fast Qwen2 patching. Transformers: 4.52.4. vLLM: 0.9.0.
Unsloth: Direct module loading failed for UnslothGRPOTrainer: name 'InvalidVersion' is not defined
Traceback (most recent call last):
  File "/content/train.py", line 40, in <module>
    trainer = GRPOTrainer(model=model, args=args)
  File "/content/unsloth_compiled_cache/UnslothGRPOTrainer.py", line 1420, in __init__
    if InvalidVersion(x):
NameError: name 'InvalidVersion' is not defined
"""

VLLMSRC = """\
Traceback (most recent call last):
  File "/home/u/vllm/examples/offline.py", line 1, in <module>
    from vllm import LLM
  File "/home/u/vllm/vllm/__init__.py", line 5, in <module>
    from vllm.engine.arg_utils import EngineArgs
  File "/home/u/vllm/vllm/model_executor/layers/activation.py", line 9, in <module>
    from vllm import _custom_ops as ops
ImportError: cannot import name '_custom_ops' from partially initialized module 'vllm' (most likely due to a circular import) (/home/u/vllm/vllm/__init__.py)
"""

VLLMC = """\
Traceback (most recent call last):
  File "/workspace/vllm/vllm/_custom_ops.py", line 5, in <module>
    import vllm._C
ModuleNotFoundError: No module named 'vllm._C'
"""

TORCHDRIFT = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 2, in <module>
    import vllm
  File "/usr/local/lib/python3.11/site-packages/vllm/compilation/backends.py", line 20, in <module>
    from torch._inductor.config import patch
  File "/usr/local/lib/python3.11/site-packages/vllm/compilation/compiler_interface.py", line 44, in <module>
    torch._inductor.config.patch(force_disable_caches=True)
RuntimeError: Unexpected optimization option force_disable_caches, known options are ['debug', 'disable_progress']
"""

TORCHDRIFT_V = """\
INFO 05-01 10:00:00 [__init__.py:239] vLLM version: 0.10.2
Traceback (most recent call last):
  File "/home/u/train.py", line 2, in <module>
    import vllm
  File "/usr/local/lib/python3.11/site-packages/vllm/compilation/backends.py", line 20, in <module>
    from torch._inductor.config import patch
  File "/usr/local/lib/python3.11/site-packages/vllm/compilation/compiler_interface.py", line 44, in <module>
    torch._inductor.config.patch(force_disable_caches=True)
RuntimeError: Unexpected optimization option force_disable_caches, known options are ['debug', 'disable_progress']
"""

TORCHDRIFT_USER = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 2, in <module>
    import vllm
  File "/usr/local/lib/python3.11/site-packages/vllm/compilation/backends.py", line 20, in <module>
    from torch._inductor.config import patch
  File "/home/u/train.py", line 44, in <module>
    torch._inductor.config.patch(force_disable_caches=True)
RuntimeError: Unexpected optimization option force_disable_caches, known options are ['debug', 'disable_progress']
"""

NUMPY = """\
A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.0.1 as it may crash. To support both 1.x and 2.x
versions of NumPy, modules must be compiled with NumPy 2.0.
Some module may need to rebuild instead e.g. with 'pybind11>=2.12'.

Traceback (most recent call last):
  File "/home/u/train.py", line 1, in <module>
    import torch
  File "/usr/local/lib/python3.10/site-packages/torch/__init__.py", line 1477, in <module>
    from .functional import *  # noqa: F403
AttributeError: _ARRAY_API not found
Traceback (most recent call last):
  File "/home/u/train.py", line 5, in <module>
    import pandas
  File "/usr/local/lib/python3.10/site-packages/pandas/__init__.py", line 22, in <module>
    from pandas.compat import is_numpy_dev as _is_numpy_dev  # pyright: ignore # noqa:F401
ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject
"""

NUMPY_HEALTHY = """\

A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.1.0 as it may crash. To support both 1.x and 2.x
versions of NumPy, modules must be compiled with NumPy 2.0.
Some module may need to rebuild instead e.g. with 'pybind11>=2.12'.

If you are a user of the module, the easiest solution will be to
downgrade to 'numpy<2' or try to upgrade the affected module.
We expect that some modules will need time to support NumPy 2.

/usr/local/lib/python3.10/site-packages/torch/_subclasses/functional_tensor.py:258: UserWarning: Failed to initialize NumPy: _ARRAY_API not found (Triggered internally at ../torch/csrc/utils/tensor_numpy.cpp:84.)
  cpu = _conversion_method_template(device=torch.device("cpu"))
{'loss': 0.0123, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'epoch': 0.1}
{'loss': 0.0101, 'grad_norm': 0.4, 'learning_rate': 1e-06, 'epoch': 0.2}
{'train_runtime': 120.5, 'train_samples_per_second': 1.2, 'epoch': 1.0}
"""


# -- 1. a Python older than a package's code (TRI029) -------------------------------------------


def test_pep604_union_in_a_package_on_python_39_is_the_interpreter():
    (f,) = _all(PY604)
    assert (f.rule, f.severity) == ("TRI029", Severity.ERROR)
    assert "Python 3.10" in f.message and "Python 3.9" in f.message and "trl" in f.message
    assert "python=3.10" in f.fix


def test_pep585_generic_in_a_package_on_python_38_names_vllms_requires_python():
    (f,) = _all("INFO 05-01 10:00:00 vLLM version: 0.10.2\n" + PY585)
    assert (f.rule, f.severity) == ("TRI029", Severity.ERROR)
    assert "Requires-Python" in f.message and "3.8" in f.message
    assert "Python 3.9 or later" in f.fix


def test_match_statement_syntax_error_in_a_package_needs_python_310():
    (f,) = _all(PYMATCH)
    assert (f.rule, f.severity) == ("TRI029", Severity.ERROR)
    assert "match statement" in f.message


def test_the_users_own_generic_is_not_a_package_python_problem():
    assert all(f.rule != "TRI029" for f in _all(PYUSER))


def test_a_python_that_has_the_feature_is_another_cause():
    text = PY604.replace("python3.9", "python3.11")
    assert all(f.rule != "TRI029" for f in _all(text))


def test_subscript_of_a_non_builtin_is_not_pep585():
    text = PY585.replace("def _parse(x: list[str]) -> dict[str, int]:", "x = Config[0]")
    assert all(f.rule != "TRI029" for f in _all(text))


# -- 2. a NameError in a package's own code (TRI014) -------------------------------------------


def test_name_error_in_an_installed_package_frame_is_its_release_bug():
    (f,) = _all(NAMEERR)
    assert (f.rule, f.severity) == ("TRI014", Severity.ERROR)
    assert "unwrap_model_for_generation" in f.message and "pip install --upgrade 'trl'" in f.fix


def test_name_error_in_unsloth_generated_code_names_the_cache():
    (f,) = _all(UNSLOTHGEN)
    assert (f.rule, f.severity) == ("TRI014", Severity.ERROR)
    assert "UnslothGRPOTrainer.py" in f.message and "unsloth_compiled_cache" in f.fix
    assert "unsloth_zoo" in f.fix


def test_unsloth_compiler_line_alone_is_read():
    text = "Unsloth: Direct module loading failed for UnslothSFTTrainer: name 'Foo' is not defined\n"
    (f,) = _all(text)
    assert f.rule == "TRI014" and "UnslothSFTTrainer.py" in f.message


def test_name_error_in_the_users_script_is_not_a_package_bug():
    text = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 30, in <module>
    trainer = GRPOTrainer(model=model, train_dataset=train_dataset)
NameError: name 'train_dataset' is not defined
"""
    assert all(f.rule != "TRI014" for f in _all(text))


def test_an_optional_import_stays_the_missing_package():
    text = """\
Traceback (most recent call last):
  File "/home/u/sft.py", line 10, in <module>
    peft_config=get_peft_config(model_args),
  File "/usr/local/lib/python3.10/dist-packages/trl/trainer/utils.py", line 718, in get_peft_config
    peft_config = LoraConfig(
NameError: name 'LoraConfig' is not defined
"""
    (f,) = _all(text)
    assert f.rule == "TRI013"


# -- 3. a package imported from its source tree (TRI024) ---------------------------------------


def test_circular_import_inside_a_vllm_checkout_is_the_source_tree():
    (f,) = _all(VLLMSRC)
    assert (f.rule, f.severity) == ("TRI024", Severity.ERROR)
    assert "/home/u/vllm" in f.message and "another directory" in f.fix and "pip install -e ." in f.fix


def test_missing_compiled_module_from_a_checkout_is_the_source_tree():
    (f,) = _all(VLLMC)
    assert (f.rule, f.severity) == ("TRI024", Severity.ERROR)
    assert "_C" in f.message


def test_missing_compiled_module_of_an_installed_wheel_is_not_the_source_tree():
    text = VLLMC.replace("/workspace/vllm/vllm/", "/usr/local/lib/python3.11/site-packages/vllm/")
    assert all(f.rule != "TRI024" for f in _all(text))


def test_a_package_without_compiled_extensions_is_not_judged():
    text = VLLMSRC.replace("'vllm'", "'openrlhf'").replace("vllm", "openrlhf")
    assert all(f.rule != "TRI024" for f in _all(text))


# -- 4. a package written for a newer torch (TRI009) -------------------------------------------


def test_unknown_torch_option_set_by_vllm_is_drift_with_vllms_torch_pin():
    (f,) = _all(TORCHDRIFT_V)
    assert (f.rule, f.severity) == ("TRI009", Severity.ERROR)
    assert "torch==2.8.0" in f.fix and "force_disable_caches" in f.message


def test_unknown_torch_option_set_by_the_users_code_is_not_drift():
    assert all(f.rule != "TRI009" for f in _all(TORCHDRIFT_USER))


# -- 5. NumPy 1.x / 2.x binary incompatibility (catalogue) -------------------------------------


def test_numpy_abi_failures_are_catalogue_errors():
    found = _all(NUMPY)
    ids = {f.evidence.get("known_failure") for f in found}
    assert {"numpy-2-module-built-for-numpy-1", "numpy-module-built-for-another-numpy-dtype-size"} <= ids
    assert all(f.severity is Severity.ERROR for f in found)
    assert any("numpy<2" in f.fix for f in found)


def test_numpy_banner_in_a_run_that_trains_is_quiet():
    assert _rules(NUMPY_HEALTHY) == []


def test_numpy_dtype_runtime_warning_is_no_failure():
    text = "<frozen importlib._bootstrap>:219: RuntimeWarning: numpy.dtype size changed, may indicate binary incompatibility. Expected 96, got 88\n"
    assert all(f.rule != "TRI011" for f in _all(text))


# -- a lazy import's re-raise: the exception it wraps, shown without its traceback ----------------

LAZY = "RuntimeError: Failed to import {module} because of the following error (look up to see its traceback):{sep}{inner}\n"


def test_a_lazy_imports_wrapped_missing_module_on_the_same_line_is_the_missing_module():
    f = _all(LAZY.format(module="trl.trainer.grpo_trainer", sep=" ", inner="No module named 'vllm'"))[0]
    assert f.rule == "TRI013" and "'vllm' is not installed" in f.message
    assert "imported by trl (trainer/grpo_trainer.py)" in f.message  # no ':0' for an unknown line


def test_a_lazy_imports_wrapped_error_on_the_next_line_is_read_there():
    pep604 = LAZY.format(
        module="transformers.generation.streamers",
        sep="\n",
        inner="unsupported operand type(s) for |: 'type' and 'NoneType'",
    )
    assert _rules(pep604) == [("TRI029", "error")]
    assert "transformers" in _all(pep604)[0].message
    named = LAZY.format(
        module="trl.trainer.grpo_trainer", sep="\n", inner="ModuleNotFoundError: No module named 'vllm'"
    )
    assert _all(named)[0].rule == "TRI013"


def test_a_lazy_imports_wrapper_alone_or_with_an_unknown_message_stays_unrecognised():
    alone = LAZY.format(module="trl.trainer.grpo_trainer", sep="", inner="")
    assert [r for r, _ in _rules(alone)] == ["TRI003"]
    vague = LAZY.format(module="trl.trainer.grpo_trainer", sep="\n", inner="something went wrong")
    assert [r for r, _ in _rules(vague)] == ["TRI003"]


WORKER = (
    "(EngineCore_DP0 pid=17) ERROR 11-19 12:54:26 [core.py:710] RuntimeError: Worker failed with error "
    "'{inner}', please check the stack trace above for the root cause\n"
)


def test_a_vllm_worker_failure_quoted_by_the_executor_is_diagnosed_by_its_message():
    f = _all(WORKER.format(inner="LoRA rank 32 is greater than max_lora_rank 16."))[0]
    assert f.rule == "TRI012" and "max_lora_rank" in f.fix


def test_a_vllm_worker_failure_no_raise_prints_stays_the_wrappers_answer():
    (f,) = _all(WORKER.format(inner="something nobody raises here at all"))
    assert f.rule == "TRI003" and "wrapper's re-raise" in f.message
