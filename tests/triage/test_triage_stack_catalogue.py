"""Known failures raised in a package of the stack (flash-attn, vLLM, Liger-Kernel, bitsandbytes)
that held-out sets 23 and 24 met without a finding (issue 36 items 3/7): each fires on a synthetic
log and on the real dev log, and stays quiet on a look-alike message from another cause.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.helpers import findings, scan_bytes

DEV = Path(__file__).resolve().parents[2] / "docs" / "validation"


def _dev(rel: str) -> str:
    return (DEV / rel).read_text(encoding="utf-8")


def _entry(log: str, entry: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f"({entry})" in f.message]


def _one(log: str, entry: str, severity: str):
    got = _entry(log, entry)
    assert got, log
    assert got[0].rule == "TRI011" and got[0].severity.value == severity
    return got[0]


# -- flash-attn given fp32 q/k/v -----------------------------------------------------------------

FA_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/site-packages/unsloth/models/llama.py", line 360, in'
    " LlamaAttention_fast_forward\n"
    "    A = flash_attn_func(Q, K, V, causal = True)\n"
    '  File "/usr/local/lib/python3.10/site-packages/flash_attn/flash_attn_interface.py", line 96, in'
    " _flash_attn_forward\n"
    "    out, q, k, v, out_padded, softmax_lse, S_dmask, rng_state = flash_attn_cuda.fwd(\n"
    "RuntimeError: FlashAttention only support fp16 and bf16 data type\n"
)


@pytest.mark.parametrize(
    "log",
    [
        FA_TRACE,
        _dev("heldout-2026-11-30f/logs23c/logs/003.log"),  # LlamaFactory#993: QLoRA without --fp16
        _dev("heldout-2026-11-30g/logs24c/logs/004.log"),  # unsloth#1013: DoRA's fp32 magnitude
    ],
)
def test_flash_attn_refusing_fp32_is_an_error_to_run_attention_in_half_precision(log):
    f = _one(log, "flash-attn-fp32-inputs", "error")
    assert "bf16" in f.fix and "sdpa" in f.fix
    assert "unsloth>=2026.7.1" in f.fix  # DoRA under Unsloth: bf16=True does not help there


@pytest.mark.parametrize(
    "log",
    [
        # transformers' load-time warning: it casts, and the run trains
        "Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype"
        " in Qwen2ForCausalLM is torch.float32. You should run training or inference using Automatic"
        " Mixed-Precision via the `with torch.autocast(device_type='torch_device'):` decorator, or load"
        " the model with the `torch_dtype` argument.\n"
        "{'loss': 0.52, 'grad_norm': 1.1, 'learning_rate': 1e-05, 'epoch': 0.1}\n",
        # another refusal of the same kernel: the GPU, not the dtype
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n",
    ],
)
def test_flash_attn_look_alikes_are_not_called_fp32_inputs(log):
    assert _entry(log, "flash-attn-fp32-inputs") == []


# -- vLLM's V0 swap space ------------------------------------------------------------------------

SWAP_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/vllm/core/scheduler.py", line 1190, in'
    " _preempt_by_swap\n"
    "    self._swap_out(seq_group, blocks_to_swap_out)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/vllm/core/scheduler.py", line 1210, in _swap_out\n'
    "    raise RuntimeError(\n"
    "RuntimeError: Aborted due to the lack of CPU swap space. Please increase the swap space to avoid"
    " this error.\n"
)


@pytest.mark.parametrize("log", [SWAP_TRACE, _dev("heldout-2026-11-30g/logs24b/logs/007.log")])
def test_vllm_out_of_swap_space_is_an_error_naming_swap_space(log):
    f = _one(log, "vllm-v0-swap-space-exhausted", "error")
    assert "swap_space" in f.fix and "max_num_seqs" in f.fix


def test_a_preemption_warning_of_a_run_that_goes_on_is_quiet():
    log = (
        "WARNING 04-15 10:01:02 scheduler.py:1560] Sequence group 12 is preempted by"
        " PreemptionMode.SWAP mode because there is not enough KV cache space. This can affect the"
        " end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide"
        " more KV cache memory. total_num_cumulative_preemption=1\n"
        "{'loss': 0.01, 'grad_norm': 0.3, 'learning_rate': 1e-06, 'epoch': 0.2}\n"
    )
    assert _entry(log, "vllm-v0-swap-space-exhausted") == []


# -- vLLM SamplingParams given a non-list stop ---------------------------------------------------


def _stop_trace(path: str, function: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/work/skyrl/inference_engines/vllm_engine.py", line 88, in _sampling_params\n'
        "    return SamplingParams(**cfg)\n"
        f'  File "{path}", line 444, in {function}\n'
        "    assert isinstance(self.stop, list)\n"
        "AssertionError\n"
    )


@pytest.mark.parametrize(
    "log",
    [
        _stop_trace("/usr/lib/python3.12/site-packages/vllm/sampling_params.py", "_verify_args"),
        _dev("heldout-2026-11-30g/logs24b/logs/002.log"),  # NovaSky-AI/SkyRL#56 (a ListConfig)
    ],
)
def test_a_non_list_stop_is_an_error_to_pass_a_plain_list(log):
    f = _one(log, "vllm-sampling-params-stop-not-a-list", "error")
    assert "list(" in f.fix and "OmegaConf.to_container" in f.fix


def test_the_same_assertion_in_another_package_is_not_vllms():
    log = _stop_trace("/work/myproj/decoding/params.py", "check")
    assert _entry(log, "vllm-sampling-params-stop-not-a-list") == []


# -- Liger-Kernel 0.5.10's Qwen3-MoE patch -------------------------------------------------------

LIGER_TRACE = (
    "liger-kernel 0.5.10\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.11/site-packages/peft/tuners/tuners_utils.py", line 495, in'
    " inject_adapter\n"
    "    parent, target, target_name = _get_submodules(model, key)\n"
    "AttributeError: 'LigerQwen3MoeSwiGLUMLP' object has no attribute 'down_proj'\n"
)


@pytest.mark.parametrize("log", [LIGER_TRACE, _dev("heldout-2026-11-30g/logs24e/logs/004.log")])
def test_liger_0_5_10_qwen3_moe_block_patch_is_an_error_to_upgrade_liger(log):
    f = _one(log, "liger-0.5.10-qwen3-moe-swiglu-patches-moe-block", "error")
    assert "liger-kernel>=0.6.0" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        # another Liger class missing another attribute: not the MoE block's patch
        "AttributeError: 'LigerSwiGLUMLP' object has no attribute 'gate_up_proj'\n",
        # the fixed release: the message cannot come from this bug
        LIGER_TRACE.replace("liger-kernel 0.5.10", "liger-kernel 0.6.1"),
    ],
)
def test_liger_look_alikes_are_not_the_qwen3_moe_patch(log):
    assert _entry(log, "liger-0.5.10-qwen3-moe-swiglu-patches-moe-block") == []


# -- bitsandbytes int8 layer without its Int8Params ----------------------------------------------

SCB_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/work/train.py", line 5, in <module>\n'
    "    model = AutoModelForCausalLM.from_pretrained(model_id, quantization_config=quant_config)\n"
    '  File "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", line 2257, in state_dict\n'
    "    self._save_to_state_dict(destination, prefix, keep_vars)\n"
    '  File "/usr/lib/python3.12/site-packages/bitsandbytes/nn/modules.py", line 985, in'
    " _save_to_state_dict\n"
    "    param_from_weight = getattr(self.weight, scb_name)\n"
    "AttributeError: 'Parameter' object has no attribute 'SCB'\n"
)


@pytest.mark.parametrize("log", [SCB_TRACE, _dev("heldout-2026-11-30g/logs24e/logs/008.log")])
def test_int8_lm_head_without_scb_is_a_warning_to_keep_lm_head_skipped(log):
    # the skip list is in the training code, and other ways to lose Int8Params give the message
    f = _one(log, "bnb-int8-linear-plain-parameter-no-scb", "warning")
    assert "llm_int8_skip_modules" in f.fix and '"lm_head"' in f.fix


def test_a_missing_cb_of_another_int8_bug_is_not_the_skip_list():
    """bitsandbytes#173: RoBERTa's int8 forward, another attribute."""
    log = "AttributeError: 'Parameter' object has no attribute 'CB'\n"
    assert _entry(log, "bnb-int8-linear-plain-parameter-no-scb") == []


# -- H20 + cuBLAS 12.1 SIGFPE --------------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "[a9970a74a52a:279  :0:279] Caught signal 8 (Floating point exception: integer divide by zero)\n"
        "==== backtrace (tid:    279) ====\n"
        " 0 0x0000000000042520 __sigaction()  ???:0\n"
        " 1 0x0000000000a0bc59 cublasLt_for_cublas_ZZZ()  ???:0\n",
        _dev("heldout-2026-11-29d/logs12d/logs/010.log"),  # LlamaFactory#2750
        _dev("heldout-2026-11-30d/logs21e/logs/007.log"),  # Search-R1#134 (vLLM's logits GEMM)
    ],
)
def test_a_sigfpe_is_a_warning_naming_the_h20_cublas(log):
    # the GPU is rarely in the log: the hardware decides, so it stays a warning
    f = _one(log, "h20-cublas-sigfpe", "warning")
    assert "nvidia-cublas-cu12==12.4.5.8" in f.fix and "H20" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        "ZeroDivisionError: integer division or modulo by zero\n",
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle,"
        " opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c,"
        " CUDA_R_16BF, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`\n",
    ],
)
def test_other_division_and_cublas_errors_are_not_the_h20_sigfpe(log):
    assert _entry(log, "h20-cublas-sigfpe") == []


# -- torch 2.10's strict LR-scheduler zip after DeepSpeed dropped an empty group ------------------

ZIP = "ValueError: zip() argument 2 is longer than argument 1\n"
ZIP_ENTRY = "lr-scheduler-more-groups-than-optimizer-torch-2.10"


@pytest.mark.parametrize(
    "log",
    [
        '[rank1]:   File "/usr/lib/python3.12/site-packages/transformers/trainer.py", line 2750, in'
        " _inner_training_loop\n"
        "[rank1]:     self.lr_scheduler.step()\n"
        '[rank1]:   File "/usr/lib/python3.12/site-packages/torch/optim/lr_scheduler.py", line 296, in'
        " _update_lr\n"
        "[rank1]:     for param_group, lr in zip(self.optimizer.param_groups, values, strict=True):\n"
        f"[rank1]: {ZIP}",
        _dev("heldout-2026-11-30e/logs22e/logs/002.log"),  # Soup#336 (LoRA, ZeRO-2)
        _dev("heldout-2026-11-30g/logs24b/logs/012.log"),  # OpenRLHF#1234
    ],
)
def test_the_lr_schedulers_strict_zip_is_an_error_to_drop_empty_groups(log):
    # the scheduler's frame settles it among the strict zips (certain_with)
    f = _one(log, ZIP_ENTRY, "error")
    assert "transformers>=5.1.0" in f.fix and 'g["params"]' in f.fix


def test_a_bare_strict_zip_message_is_at_most_a_warning():
    assert [f.severity.value for f in _entry(ZIP, ZIP_ENTRY)] in ([], ["warning"])


def test_a_strict_zip_in_ones_own_code_is_not_the_lr_scheduler():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/work/proj/pairs.py", line 12, in pair_up\n'
        "    return list(zip(names, scores, strict=True))\n" + ZIP
    )
    assert _entry(log, ZIP_ENTRY) == []
