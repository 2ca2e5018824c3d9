"""Kernel libraries refusing the GPU or the CUDA they find (rules/knowledge/known_failures/kernels.yaml):
the message alone settles the cause (``symptom_decides``), so a log without versions gets an error
whose fix is the attention implementation, the release, or the GPU; a healthy log gets nothing."""

from __future__ import annotations

from tests.triage.helpers import findings, scan_bytes

_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/env/lib/python3.11/site-packages/flash_attn/flash_attn_interface.py", line 179, in '
    "_flash_attn_varlen_backward\n"
    "    dq, dk, dv, softmax_d, = flash_attn_cuda.varlen_bwd(\n"
)


def _only(log: str):
    found = [f for f in findings(scan_bytes(log)) if f.rule != "TRI003"]
    assert len(found) == 1, [(f.rule, f.message[:80]) for f in found]
    return found[0]


def test_head_dim_above_192_before_2_5_5_is_fixed_by_the_release_that_lifted_it():
    f = _only(
        _FRAMES + "RuntimeError: FlashAttention backward for head dim > 192 requires A100/A800 or H100/H800\n"
    )
    assert f.severity.value == "error"
    assert f.evidence["known_failure"] == "flash-attn-headdim-backward-consumer-gpu"
    assert "flash-attn>=2.5.5" in f.fix


def test_the_later_message_asks_for_no_dropout_not_an_upgrade():
    f = _only(
        _FRAMES + "RuntimeError: FlashAttention backward for head dim 256 with dropout, or head dim 224 "
        "with/without dropout requires A100/A800 or H100/H800\n"
    )
    assert f.evidence["known_failure"] == "flash-attn-headdim-256-dropout-backward"
    assert "attention_dropout" in f.fix and "2.5.5" not in f.fix


def test_a_run_that_uses_flash_attention_without_failing_gets_nothing():
    log = (
        "Using flash_attention_2 for attention (flash_attn 2.7.4.post1 on Ampere or newer)\n"
        "{'loss': 0.0123, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'epoch': 0.02}\n"
    )
    assert findings(scan_bytes(log)) == []


def test_bitsandbytes_setup_failure_points_at_the_release_that_follows_torchs_cuda():
    f = _only(
        "RuntimeError: \n        CUDA Setup failed despite GPU being available. Please run the following\n"
    )
    assert f.severity.value == "error" and f.evidence["known_failure"] == "bitsandbytes-cuda-setup-failed"
    assert "bitsandbytes>=0.43.1" in f.fix


def test_vllm_ops_missing_because_its_extension_did_not_load():
    f = _only(
        "WARNING 09-23 09:11:27 _custom_ops.py:18] Failed to import from vllm._C with "
        "ImportError('libcuda.so.1: cannot open shared object file')\n"
        "AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'\n"
    )
    assert f.severity.value == "error" and f.evidence["known_failure"] == "vllm-compiled-ops-not-loaded"
    assert "force-reinstall vllm==" in f.fix


def test_the_import_warning_alone_is_not_a_failure():
    log = (
        "WARNING 03-06 13:44:18 [_custom_ops.py:21] Failed to import from vllm._C with "
        "ModuleNotFoundError(\"No module named 'vllm._C'\")\n"
        "INFO 03-06 13:44:19 [api_server.py:1] vLLM API server version 0.8.1\n"
    )
    assert not [f for f in findings(scan_bytes(log)) if "known_failure" in f.evidence]


def test_no_kernel_image_naming_an_extensions_csrc_kernel_is_that_extensions_build():
    """The message names the failing kernel's source (flash-attention/csrc/layer_norm/…): the
    extension's build lacks this GPU, not torch's or vLLM's; a message without such a path stays
    the torch / vLLM build entry."""
    from tests.triage.helpers import findings, scan_bytes

    ext = (
        "CUDA Error: no kernel image is available for execution on the device "
        "flash-attention/csrc/layer_norm/ln_fwd_kernels.cuh 236\n"
    )
    (f,) = findings(scan_bytes(ext))
    assert "extension compiled from source" in f.message and "TORCH_CUDA_ARCH_LIST" in f.fix
    bare = "CUDA Error: no kernel image is available for execution on the device\n"
    (g,) = findings(scan_bytes(bare))
    assert "torch or vLLM build" in g.message
