# ruff: noqa: E501 - log lines are quoted as programs print them
"""A package's compiled part that does not load (compiled.py's TRI041; TRI005's loader message on
two lines, cut, or pasted as a Markdown link; the CUDA libraries of TRI011's catalogue entry): each
fires on its shape and stays quiet on a near-miss. The texts are synthetic, in the grammar Python
and the dynamic loader print."""

from __future__ import annotations

from envdoctor.findings import Severity
from envdoctor.triage.compiled import companion
from tests.conftest import H100, MODERN, snapshot
from tests.triage.helpers import findings, judge, scan_bytes


def _all(text: str, ctx=None):
    return findings(scan_bytes(text), ctx)


def _rules(text: str) -> list[tuple[str, str]]:
    return [(f.rule, f.severity.value) for f in _all(text)]


VLLM_C_WINDOWS = """\
ModuleNotFoundError                       Traceback (most recent call last)
Cell In[7], line 3
----> 3 from unsloth import FastLanguageModel

File ~\\AppData\\Local\\Programs\\Python\\Python312\\Lib\\site-packages\\unsloth\\import_fixes.py:478, in fix_vllm_guided_decoding_params()
--> 478     from vllm.sampling_params import GuidedDecodingParams

File ~\\AppData\\Local\\Programs\\Python\\Python312\\Lib\\site-packages\\vllm\\platforms\\cuda.py:21
---> 21 import vllm._C  # noqa

ModuleNotFoundError: No module named 'vllm._C'
"""

VLLM_C_LINUX = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    from vllm import LLM
  File "/opt/venv/lib/python3.11/site-packages/vllm/platforms/cuda.py", line 21, in <module>
    import vllm._C  # noqa
ModuleNotFoundError: No module named 'vllm._C'
"""


def test_vllm_c_missing_on_windows_says_vllm_has_no_windows_build():
    (f,) = _all(VLLM_C_WINDOWS)
    assert (f.rule, f.severity) == ("TRI041", Severity.ERROR)
    assert "no build for Windows" in f.message and "WSL2" in f.fix and "pip uninstall -y vllm" in f.fix


def test_vllm_c_missing_from_an_installed_build_is_a_partial_install():
    (f,) = _all(VLLM_C_LINUX)
    assert (f.rule, f.severity) == ("TRI041", Severity.ERROR)
    assert "without its compiled module vllm._C" in f.message and "--force-reinstall" in f.fix
    assert "Windows" not in f.message + f.fix


def test_vllm_c_missing_with_the_logs_release_pins_it():
    (f,) = _all("vllm==0.8.5\n" + VLLM_C_LINUX)
    assert f.rule == "TRI041" and "vllm==0.8.5" in f.fix


def test_a_checkout_stays_the_source_tree():
    text = VLLM_C_LINUX.replace("/opt/venv/lib/python3.11/site-packages/vllm/", "/workspace/vllm/vllm/")
    assert [r for r, _ in _rules(text)] == ["TRI024"]


def test_only_the_module_name_is_a_warning():
    text = "    import flash_attn_2_cuda as flash_attn_gpu\nModuleNotFoundError: No module named 'flash_attn_2_cuda'\n"
    (f,) = _all(text)
    assert (f.rule, f.severity) == ("TRI041", Severity.WARNING)
    assert "flash-attn" in f.message and "this Python" in f.fix


def test_a_python_submodule_of_a_package_is_not_its_compiled_part():
    text = VLLM_C_LINUX.replace("vllm._C", "vllm.model_executor.guided_decoding")
    assert all(f.rule != "TRI041" for f in _all(text))
    text = VLLM_C_LINUX.replace("vllm._C", "vllm._custom_ops")
    assert all(f.rule != "TRI041" for f in _all(text))


def test_a_run_that_went_on_without_the_extension_is_no_failure():
    text = VLLM_C_LINUX + "{'loss': 0.12, 'grad_norm': 1.0, 'learning_rate': 1e-06, 'epoch': 0.1}\n"
    assert all(f.rule != "TRI041" for f in _all(text))


def test_healthy_logs_that_mention_a_missing_extension_stay_without_an_error():
    text = (
        "WARNING 03-06 13:44:18 [_custom_ops.py:21] Failed to import from vllm._C with "
        "ModuleNotFoundError(\"No module named 'vllm._C'\")\n"
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
        "    PyTorch 2.5.1+cu121 with CUDA 1201 (you have 2.6.0+cu124)\n"
        "  Memory-efficient attention, SwiGLU, sparse and more won't be available.\n"
        "  warnings.warn(\n"
        "{'loss': 0.01, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'epoch': 1.0}\n"
        "{'train_runtime': 120.0, 'train_loss': 0.02, 'epoch': 1.0}\n"
    )
    assert all(f.severity != Severity.ERROR for f in _all(text)), _rules(text)


# -- TRI005: the loader's message as logs carry it ----------------------------------------------


def test_symbol_on_the_line_after_the_library_is_read():
    text = (
        "ImportError: /venv/lib/python3.12/site-packages/vllm/_C.abi3.so:\n"
        "undefined symbol: _ZN3c1013MessageLoggerC1EPKciib\n"
    )
    (f,) = _all(text)
    assert (f.rule, f.severity) == ("TRI005", Severity.ERROR)
    assert f.message.startswith("vllm does not load: _C.abi3.so")


def test_a_symbol_line_after_no_library_is_not_judged():
    text = "some text before\n  undefined symbol: _ZN3c1013MessageLoggerC1EPKciib\n"
    assert all(f.rule != "TRI005" for f in _all(text))


TORCHCODEC = """\
    RuntimeError: Could not load libtorchcodec.
    ...
    /usr/local/lib/python3.12/dist-packages/torchcodec/libtorchcodec_core4.so:
      undefined symbol: _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_jb
"""


def test_torchcodec_built_for_another_torch_names_its_release_for_the_logs_torch():
    (f,) = _all("torch==2.7.1+cu126\n" + TORCHCODEC)
    assert (f.rule, f.severity) == ("TRI005", Severity.ERROR)
    assert f.message.startswith("torchcodec does not load") and "torch 2.7.1+cu126" in f.message
    assert "torchcodec==0.5.*" in f.fix and "pip uninstall -y torchcodec" in f.fix


def test_torchcodec_without_the_logs_torch_says_how_to_read_it():
    ctx = judge(snapshot(1, H100, {**MODERN, "torch": "2.13.0"}))
    from dataclasses import replace

    live = replace(ctx, facts=replace(ctx.facts, source="live"))
    (f,) = _all(TORCHCODEC, live)
    assert f.rule == "TRI005" and "2.13.0" not in f.fix and "torch.__version__" in f.fix


def test_companion_releases_come_from_the_data():
    assert companion("torchvision", "2.6.0+cu124") == "0.21"
    assert companion("torchaudio", "2.8.0") == "2.8"
    assert companion("torchcodec", "2.8.0") == "0.7"
    assert companion("torchcodec", "1.13.1") is None


def test_a_markdown_link_around_the_library_reads_as_its_name():
    text = (
        "/home/u/miniconda3/envs/llm/lib/python3.9/site-packages/[flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so]"
        "(http://flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so/): undefined symbol: _ZN2at4_ops9_pad_enum4callERKNS_6TensorE\n"
    )
    (f,) = _all(text)
    assert f.rule == "TRI005" and "flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so needs" in f.message


def test_a_message_cut_after_undefined_symbol_is_a_warning_for_a_known_extension():
    (f,) = _all("flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol:\n")
    assert (f.rule, f.severity) == ("TRI005", Severity.WARNING) and "flash-attn" in f.message
    assert all(f.rule != "TRI005" for f in _all("/opt/x/libfoo.so: undefined symbol:\n"))


# -- TRI011's entry: a CUDA library of another major release -------------------------------------


def test_cublas_of_another_cuda_major_is_the_cuda_library_entry():
    (f,) = _all("ImportError: libcublas.so.13: cannot open shared object file: No such file or directory\n")
    assert f.rule == "TRI011" and "nvidia-cublas-cuN" in f.fix
    found = _all("ImportError: libcuda.so.1: cannot open shared object file: No such file or directory\n")
    assert [f.rule for f in found] == ["TRI030"]
