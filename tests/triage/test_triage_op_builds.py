"""Binaries a package builds or picks at run time: DeepSpeed's JIT-built ops, bitsandbytes' CPU fallback."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes

DS_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 102, in __del__\n'
    "    self.ds_opt_adam.destroy_adam(self.opt_id)\n"
    "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'\n"
)


@pytest.mark.parametrize(
    "log",
    [
        "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'\n",
        DS_TRACE,
        "RuntimeError: Error building extension 'fused_adam'\n",
        "[rank1]: RuntimeError: Error building extension 'cpu_adam'\n",
    ],
)
def test_a_deepspeed_op_that_failed_to_build_is_named_with_the_build_fix(log):
    found = findings(scan_bytes(log))
    assert found and found[0].rule == "TRI011" and found[0].severity.value == "error"
    assert "deepspeed-op-jit-build-failed" in found[0].message
    assert "DS_BUILD_CPU_ADAM=1" in found[0].fix and "CUDA_HOME" in found[0].fix


@pytest.mark.parametrize(
    "log",
    [
        # a user's own class and an extension that is not DeepSpeed's
        "AttributeError: 'MyAdam' object has no attribute 'ds_opt'\n",
        "RuntimeError: Error building extension 'my_kernels'\n",
    ],
)
def test_look_alikes_of_a_deepspeed_op_build_are_not_blamed_on_deepspeed(log):
    assert all("deepspeed-op-jit-build-failed" not in f.message for f in findings(scan_bytes(log)))


BNB_CPU = (
    "AttributeError: /home/u/envs/x/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cpu.so: "
    "undefined symbol: cquantize_blockwise_fp16_nf4\n"
)


def test_bitsandbytes_on_its_cpu_library_is_its_cuda_setup_with_the_upgrade():
    found = findings(scan_bytes(BNB_CPU))
    assert found and found[0].rule == "TRI011" and found[0].severity.value == "error"
    assert "bitsandbytes-cuda-setup-failed" in found[0].message
    assert "bitsandbytes>=0.43.1" in found[0].fix


def test_the_bitsandbytes_line_pasted_without_its_exception_is_read_too():
    """qlora's users pasted the loader's line alone (artidoro/qlora#31: cquantize_blockwise_fp16_fp4)."""
    log = (
        "/home/u/envs/qlora/lib/python3.11/site-packages/bitsandbytes/libbitsandbytes_cpu.so: "
        "undefined symbol: cquantize_blockwise_fp16_fp4\n"
    )
    found = findings(scan_bytes(log))
    assert found and "bitsandbytes-cuda-setup-failed" in found[0].message


def test_the_bitsandbytes_line_wrapped_after_undefined_symbol_is_read_too():
    """h2oai/h2ogpt#432: the terminal wrapped the exception's line before the symbol's name."""
    log = (
        '  File "/home/j/conda/envs/h2ogpt/lib/python3.10/ctypes/__init__.py", line 392, in __getitem__\n'
        "    func = self._FuncPtr((name, self))\n"
        "AttributeError: /home/j/miniconda3/envs/h2ogpt/lib/python3.10/site-packages/bitsandbytes/"
        "libbitsandbytes_cpu.so: undefined symbol:\n"
        "cget_col_row_stats\n"
    )
    found = findings(scan_bytes(log))
    assert found and "bitsandbytes-cuda-setup-failed" in found[0].message


BNB_WINDOWS = (
    "bin E:\\Anaconda\\envs\\llama_etuning\\lib\\site-packages\\bitsandbytes\\libbitsandbytes_cpu.dll\n"
    "function 'cadam32bit_grad_fp32' not found\n"
)


def test_bitsandbytes_cpu_dll_on_windows_is_its_cuda_setup():
    """bitsandbytes-foundation/bitsandbytes#719: Windows' ctypes names the missing C method so;
    the import's own probe line alone (the run may go on) is no finding."""
    log = BNB_WINDOWS + (
        '  File "E:\\Anaconda\\envs\\llama_etuning\\lib\\site-packages\\bitsandbytes\\functional.py", '
        "line 1051, in quantize_4bit\n"
        "    lib.cquantize_blockwise_fp16_nf4(get_ptr(None), get_ptr(A))\n"
        "AttributeError: function 'cquantize_blockwise_fp16_nf4' not found\n"
    )
    found = findings(scan_bytes(log))
    assert found and found[0].rule == "TRI011" and "bitsandbytes-cuda-setup-failed" in found[0].message
    assert "bitsandbytes>=0.43.1" in found[0].fix
    quiet = BNB_WINDOWS + "{'loss': 0.41, 'grad_norm': 1.2, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
    assert all("bitsandbytes-cuda-setup-failed" not in f.message for f in findings(scan_bytes(quiet)))


def test_bitsandbytes_cpu_library_is_quiet_on_a_release_past_the_fix():
    log = "bitsandbytes==0.45.0\n" + BNB_CPU
    assert all("bitsandbytes-cuda-setup-failed" not in f.message for f in findings(scan_bytes(log)))


def test_bitsandbytes_cpu_only_warning_in_a_run_that_trains_is_no_finding():
    log = (
        "UserWarning: The installed version of bitsandbytes was compiled without GPU support. "
        "8-bit optimizers, 8-bit multiplication, and GPU quantization are unavailable.\n"
        "{'loss': 0.41, 'grad_norm': 1.2, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
        "{'loss': 0.39, 'grad_norm': 1.1, 'learning_rate': 1e-05, 'epoch': 0.2}\n"
    )
    assert [f for f in findings(scan_bytes(log)) if f.severity.value != "info"] == []


BNB_CPU_ONLY = (
    "Traceback (most recent call last):\n"
    '  File "/v/lib/python3.11/site-packages/bitsandbytes/functional.py", line 1234, in quantize_4bit\n'
    "    lib.cquantize_blockwise_fp16_nf4(*args)\n"
    '  File "/v/lib/python3.11/site-packages/bitsandbytes/cextension.py", line 56, in throw_on_call\n'
    "    raise RuntimeError(\n"
    "RuntimeError: Method 'cquantize_blockwise_fp16_nf4' not available in CPU-only version of bitsandbytes.\n"
    "Reinstall with GPU support or use CUDA-enabled hardware.\n"
)


@pytest.mark.parametrize("log", [BNB_CPU_ONLY, "[rank0]: " + BNB_CPU_ONLY.splitlines()[-2] + "\n"])
def test_bitsandbytes_0_46_cpu_only_library_names_torch_without_cuda(log):
    """bitsandbytes 0.46.0-0.50.1 cextension.py: BNBNativeLibrary's throw_on_call (read at the tags)."""
    found = findings(scan_bytes(log))
    assert found and found[0].rule == "TRI011" and found[0].severity.value == "error"
    assert "bitsandbytes-cpu-only-library-loaded" in found[0].message
    assert "torch" in found[0].fix and "bitsandbytes>=0.43.1" not in found[0].fix


def test_bitsandbytes_0_46_native_library_stand_in_names_the_cuda_binary():
    log = (
        "RuntimeError: \n\U0001f6a8 CUDA VERSION MISMATCH \U0001f6a8\n"
        "Requested CUDA version:          12.9\n"
        "Attempted to use bitsandbytes native library functionality but it's not available.\n\n"
        "Native code method attempted to call: lib.cquantize_blockwise_bf16_nf4()\n"
    )
    found = findings(scan_bytes(log))
    assert found and found[0].severity.value == "error"
    assert "bitsandbytes-native-library-not-loaded" in found[0].message
    assert "BNB_CUDA_VERSION" in found[0].fix


def test_bitsandbytes_cpu_only_wording_is_quiet_where_the_run_trains_on():
    """python -m bitsandbytes' own diagnostics print the check; a run that trains past it did not fail."""
    log = (
        "WARNING: bitsandbytes is running as CPU-only!\n"
        "{'loss': 0.41, 'grad_norm': 1.2, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
        "{'loss': 0.39, 'grad_norm': 1.1, 'learning_rate': 1e-05, 'epoch': 0.2}\n"
    )
    assert [f for f in findings(scan_bytes(log)) if f.severity.value != "info"] == []
