"""Ecosystem failures beneath the stack (rules/knowledge/known_failures/ecosystem.yaml), each with a
scenario where it fires and one where it stays quiet; and TRI003 quoting a message's own advice.

The firing lines are the dev logs' (docs/validation/heldout-2026-11-29g/logs15b, 28h/logs3) or the
cited sources' (the ms-swift, verl, EasyR1 and ROLL FAQs; triton's build.py; safetensors).
"""

from __future__ import annotations

import pytest

from envdoctor.triage.advice import LIMIT, advice
from tests.triage.helpers import findings, scan_bytes


def _entry(log: str, entry: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f"({entry})" in f.message]


def _first(log: str):
    found = [f for f in findings(scan_bytes(log)) if f.severity.value != "info"]
    assert found, log
    return found[0]


# -- fp16 weights under fp16 AMP ---------------------------------------------------------------------

FP16_ONE_LINE = (  # heldout-2026-11-29g/logs15b/012 (the ms-swift FAQ's paste, one line)
    'lib/python3.12/site-packages/torch/amp/grad_scaler.py", line 260, in _unscale_grads_ raise '
    'ValueError("Attempting to unscale FP16 gradients.") ValueError: Attempting to unscale FP16 gradients.\n'
)
FP16_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 2380, in'
    " _inner_training_loop\n"
    "    self.accelerator.clip_grad_norm_(\n"
    '  File "/opt/conda/lib/python3.10/site-packages/accelerate/accelerator.py", line 2269, in'
    " clip_grad_norm_\n"
    "    self.unscale_gradients()\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/amp/grad_scaler.py", line 338, in unscale_\n'
    '    optimizer_state["found_inf_per_device"] = self._unscale_grads_(\n'
    '  File "/opt/conda/lib/python3.10/site-packages/torch/amp/grad_scaler.py", line 260, in'
    " _unscale_grads_\n"
    '    raise ValueError("Attempting to unscale FP16 gradients.")\n'
    "ValueError: Attempting to unscale FP16 gradients.\n"
)


@pytest.mark.parametrize("log", [FP16_ONE_LINE, FP16_TRACE])
def test_fp16_weights_under_fp16_amp_is_an_error_with_fp32_or_bf16(log):
    f = _first(log)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(amp-fp16-gradscaler-fp16-weights)" in f.message
    assert "float32" in f.fix and "bf16" in f.fix


def test_fp16_words_in_a_log_line_of_a_run_that_trains_on_are_quiet():
    """ms-swift logs that it converts fp16 trainable parameters to fp32 (its fix for the same error)."""
    log = (
        "[INFO:swift] Convert trainable parameters from fp16 to fp32 (avoids: Attempting to unscale FP16"
        " gradients.)\n"
        "{'loss': 1.21, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
        "{'loss': 1.18, 'grad_norm': 0.7, 'learning_rate': 1e-05, 'epoch': 0.2}\n"
    )
    assert _entry(log, "amp-fp16-gradscaler-fp16-weights") == []
    assert [f for f in findings(scan_bytes(log)) if f.severity.value != "info"] == []


# -- a truncated safetensors file --------------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # an interrupted download (the newer wording of MetadataIncompleteBuffer)
        "[rank0]: safetensors_rust.SafetensorError: Error while deserializing header: incomplete metadata, "
        "file not fully covered\n",
        "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer\n",
        "safetensors_rust.SafetensorError: Error while deserializing header: header too small\n",
    ],
)
def test_a_truncated_safetensors_file_is_an_error_with_the_size_check_and_a_redownload(log):
    f = _first(log)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(safetensors-file-truncated)" in f.message
    assert "git lfs pull" in f.fix and "df -h" in f.fix and "--force-download" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        # heldout-2026-11-29g/logs15b/014 (ms-swift FAQ Q48: the disk ran out while saving)
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge\n",
        # safetensors/safetensors#668: a complete 7 GB file of 1.29 M tensors, its header 126 MB
        "safetensors_rust.SafetensorError: Error while deserializing header: header too large\n",
    ],
)
def test_a_header_too_large_is_an_error_naming_a_broken_file_and_the_header_limit(log):
    # the cause names both ways to the message and the fix tells them apart: no release decides it
    # (symptom_decides), so the symptom is the diagnosis, an error without versions (issue 36 item 5)
    f = _first(log)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(safetensors-header-too-large)" in f.message
    assert "git lfs pull" in f.fix and "--force-download" in f.fix and "split" in f.fix
    assert _entry(log, "safetensors-file-truncated") == []


def test_another_safetensors_header_error_is_not_called_a_truncated_file():
    log = "safetensors_rust.SafetensorError: Error while deserializing header: InvalidHeaderDeserialization\n"
    assert _entry(log, "safetensors-file-truncated") == []


# -- a full disk -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "OSError: [Errno 28] No space left on device:"
        " '/root/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B/blobs/x.incomplete'\n",
        "[rank0]: OSError: [Errno 122] Disk quota exceeded: '/home/u/out/checkpoint-500/optimizer.pt'\n",
        # hiyouga/LlamaFactory#5155 (safetensors' writer)
        "safetensors_rust.SafetensorError: Error while serializing: IoError(Os { code: 28, kind:"
        " StorageFull, "
        'message: "No space left on device" })\n',
    ],
)
def test_a_full_disk_is_an_error_that_says_to_free_space(log):
    f = _first(log)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(disk-full-enospc)" in f.message
    assert "df -h" in f.fix and "save_total_limit" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        # /dev/shm is the shared-memory rule's (TRI027), not a disk's
        "OSError: [Errno 28] No space left on device: '/dev/shm/torch_1234_5678'\n",
        # no path: inotify's watch limit and POSIX semaphores give the same errno
        "OSError: [Errno 28] No space left on device\n",
    ],
)
def test_no_space_on_shared_memory_or_without_a_path_is_not_called_a_full_disk(log):
    assert _entry(log, "disk-full-enospc") == []


# -- a CUDA runtime library missing ------------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # heldout-2026-11-28h/logs3/007 (unslothai/unsloth#6621: a CUDA 13 vLLM wheel on Colab's CUDA 12)
        "ImportError: libcudart.so.13: cannot open shared object file\n",
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n",
    ],
)
def test_a_missing_libcudart_is_an_error_naming_the_build_for_the_installed_cuda(log):
    f = _first(log)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(cuda-runtime-library-missing)" in f.message
    assert "torch.version.cuda" in f.fix and "nvidia-cuda-runtime-cuN" in f.fix


def test_bitsandbytes_searching_for_libcudart_is_not_a_missing_runtime():
    """bitsandbytes 0.39's CUDA setup prints its search and goes on (heldout-2026-11-29c/logs11d/012)."""
    log = (
        "CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching in backup"
        " paths...\n"
        "CUDA SETUP: CUDA runtime path found: /usr/local/cuda/lib64/libcudart.so\n"
    )
    assert _entry(log, "cuda-runtime-library-missing") == []


# -- Triton's C builds -------------------------------------------------------------------------------

NO_CC = (  # triton 3.3's build.py, as a user pasted it
    "Traceback (most recent call last):\n"
    '  File "/home/u/.local/lib/python3.10/site-packages/triton/runtime/build.py", line 93, in'
    " compile_module_from_src\n"
    "    so = _build(name, src_path, tmpdir, library_dirs or [], include_dirs or [], libraries or [],"
    " ccflags or [])\n"
    '  File "/home/u/.local/lib/python3.10/site-packages/triton/runtime/build.py", line 32, in _build\n'
    "    raise RuntimeError(\n"
    "RuntimeError: Failed to find C compiler. Please specify via CC environment variable or set "
    "triton.knobs.build.impl.\n"
)


def test_triton_without_a_c_compiler_is_an_error_to_install_one():
    f = _first(NO_CC)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(triton-no-c-compiler)" in f.message
    assert "build-essential" in f.fix and "CC=" in f.fix


def test_a_framework_that_falls_back_without_a_compiler_and_trains_is_quiet():
    log = (
        "WARNING: torch.compile disabled (RuntimeError: Failed to find C compiler. Please specify via CC "
        "environment variable.); running eagerly\n"
        "{'loss': 0.9, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
        "{'loss': 0.8, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.2}\n"
    )
    assert _entry(log, "triton-no-c-compiler") == []


def test_triton_helper_build_failing_is_a_warning_pointing_at_the_compiler_output():
    log = (
        '  File "/opt/conda/lib/python3.10/site-packages/triton/runtime/build.py", line 48, in _build\n'
        "    ret = subprocess.check_call(cc_cmd)\n"
        "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpk3j2ab/cuda_utils.c', '-O3', "
        "'-shared', '-fPIC', '-o', '/tmp/tmpk3j2ab/cuda_utils.cpython-310-x86_64-linux-gnu.so', '-lcuda', "
        "'-L/usr/lib/x86_64-linux-gnu', '-I/opt/conda/include/python3.10']' returned non-zero exit status"
        " 1.\n"
    )
    found = _entry(log, "triton-jit-helper-build-failed")
    assert found and found[0].severity.value == "warning"
    assert "Python.h" in found[0].fix and "use_torch_compile=False" in found[0].fix


def test_another_failed_command_is_not_tritons_build():
    log = "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n"
    assert _entry(log, "triton-jit-helper-build-failed") == []


def test_triton_with_no_active_driver_is_an_error_naming_the_gpu_check_and_easyr1s_deepspeed():
    # heldout-2026-11-29g/logs15b/006 (EasyR1's FAQ): one condition behind the message (no CUDA in
    # that process), whatever the release: an error without versions (issue 36 item 5)
    found = _entry(
        "RuntimeError: 0 active drivers ([]). There should only be one.\n", "triton-no-active-gpu-driver"
    )
    assert found and found[0].severity.value == "error"
    assert "torch.cuda.is_available()" in found[0].fix and "pip uninstall deepspeed" in found[0].fix


def test_two_active_triton_drivers_are_not_none():
    log = "RuntimeError: 2 active drivers ([CudaDriver, HIPDriver]). There should only be one.\n"
    assert _entry(log, "triton-no-active-gpu-driver") == []


# -- TransformerEngine's torch.compile ---------------------------------------------------------------


def test_backend_compiler_failed_rebuilt_is_a_warning_with_nvte_torch_compile_off():
    # heldout-2026-11-29g/logs15b/010 (ROLL's FAQ)
    log = "TypeError: BackendCompilerFailed.__init__() missing 1 required positional argument\n"
    found = _entry(log, "transformer-engine-torch-compile-failed")
    assert found and found[0].severity.value == "warning"
    assert "NVTE_TORCH_COMPILE=0" in found[0].fix


def test_another_exceptions_missing_argument_is_not_tes():
    log = "TypeError: MyError.__init__() missing 1 required positional argument: 'code'\n"
    assert _entry(log, "transformer-engine-torch-compile-failed") == []


# -- TRI003: the message's own advice as the fix ------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "said"),
    [
        (  # heldout-2026-11-29g/logs15b/018 (vLLM, through ms-swift)
            "ValueError: the decoder prompt contains a(n) video item with length 16758, which exceeds the "
            "pre-allocated encoder cache size 16384. Please reduce the input size or increase the encoder "
            "cache size by setting --limit-mm-per-prompt at startup.\n",
            "Please reduce the input size or increase the encoder cache size by setting"
            " --limit-mm-per-prompt",
        ),
        (  # heldout-2026-11-29/logs3/003
            "wandb.errors.errors.Error: You must call wandb.init() before wandb.log()\n",
            "You must call wandb.init() before wandb.log()",
        ),
        (  # heldout-2026-11-28f/logs5/002: the message goes on on the next line
            "ValueError: Ray does not allocate any GPUs on the driver node. Consider adjusting\n"
            "the Ray placement group or running the driver on a GPU node.\n",
            "Consider adjusting the Ray placement group or running the driver on a GPU node.",
        ),
    ],
)
def test_an_unrecognised_crash_quotes_the_messages_own_advice_as_its_fix(log, said):
    f = _first(log)
    assert f.rule == "TRI003" and f.severity.value == "warning"  # the severity stays
    assert said in f.fix and f.fix.startswith("the message's own advice: “")
    assert "read the traceback above the named line" in f.fix
    assert f.evidence["advice"].startswith(said[:40])


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: NCCL error: internal error - please report this issue to the NCCL developers\n",
        "RuntimeError: Worker failed with error 'x', please check the stack trace above for the root cause\n",
        "RuntimeError: you can only change requires_grad flags of leaf variables.\n",
        "ValueError: You can't train a model that has been loaded in 8-bit precision on multiple devices.\n",
        "RuntimeError: CUDA error: device-side assert triggered. For debugging consider passing "
        "CUDA_LAUNCH_BLOCKING=1.\n",
        "ValueError: Ray does not allocate any GPUs on the driver node. Consider adjusting\n",  # a fragment
    ],
)
def test_no_advice_is_quoted_where_the_message_gives_none(log):
    f = _first(log)
    assert f.rule == "TRI003"
    assert "own advice" not in f.fix and "advice" not in f.evidence


def test_the_quoted_advice_is_bounded_and_free_of_control_characters():
    said = advice(
        "ValueError: x failed. Please set \x1b[31mmax_len\x1b[0m\x07 to " + "a" * 30 + " b" * 300 + "."
    )
    assert said.startswith("Please set") and len(said) <= LIMIT
    assert not any(ord(c) < 32 or c == "\x7f" for c in said)


def test_the_quoted_advice_holds_no_c1_control_bidi_override_or_osc_link():
    said = advice(
        "ValueError: x failed. Please set the key \u202egnp.exe\u202c to True in \x9b31mthe config"
        " and \x1b]8;;http://example.invalid\x1b\\click\x1b]8;;\x1b\\ here\u2028now."
    )
    assert said.startswith("Please set the key") and said.endswith("click here now.")
    assert said.isprintable() and "]8;;" not in said and "example.invalid" not in said


def test_advice_reads_only_the_exception_message():
    assert advice("INFO: Please set HF_TOKEN to download gated models faster") == ""
    assert advice("KeyError: 'x'") == ""


def test_the_compilers_own_line_settles_tritons_helper_build_as_an_error():
    """gcc's 'Python.h: No such file or directory' above the failed command names what is missing."""
    log = (
        "/tmp/tmpk3j2ab/cuda_utils.c:6:10: fatal error: Python.h: No such file or directory\n"
        "    6 | #include <Python.h>\n"
        "compilation terminated.\n"
        '  File "/opt/conda/lib/python3.10/site-packages/triton/runtime/build.py", line 48, in _build\n'
        "    ret = subprocess.check_call(cc_cmd)\n"
        "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpk3j2ab/cuda_utils.c', '-O3', "
        "'-shared', '-fPIC', '-o', '/tmp/tmpk3j2ab/cuda_utils.so', '-lcuda']' "
        "returned non-zero exit status 1.\n"
    )
    found = _entry(log, "triton-jit-helper-build-failed")
    assert found and found[0].severity.value == "error"
    assert "Python.h" in found[0].message


@pytest.mark.parametrize(
    "text",
    [
        # heldout-2026-11-28d/logs2/009: a noun phrase that starts like an imperative
        "Exception: Call to collective_rpc method failed: 'visual.patch_embed.proj.weight'",
        "RuntimeError: Use of an uninitialized tensor in the forward pass of the model.",
        "ValueError: Set of modules to save is empty for this adapter configuration.",
    ],
)
def test_a_noun_phrase_in_advices_words_is_no_advice(text):
    assert advice(text) == ""


def test_no_kernel_image_naming_an_extensions_kernel_is_an_error_and_alone_stays_a_warning():
    """heldout-2026-11-29d/logs12b/009 (flash-attn's legacy layer_norm on Blackwell, tridao's answer):
    the message names the binary without this GPU's architecture; without that path it could be
    torch, vLLM or any extension (TRI025's and the catalogue's warnings)."""
    named = (
        "CUDA Error: no kernel image is available for execution on the device "
        "flash-attention/csrc/layer_norm/ln_fwd_kernels.cuh 236\n"
    )
    f = _first(named)
    assert f.severity.value == "error" and "(extension-build-missing-arch)" in f.message
    bare = _first("CUDA Error: no kernel image is available for execution on the device\n")
    assert bare.severity.value == "warning"


def test_no_kernel_image_naming_torchs_own_csrc_is_no_extension_error():
    """torch's own kernels live under torch/csrc/: a torch wheel without the GPU's architecture is not an
    extension built from source, so the message naming torch/csrc/ stays the plain warning."""
    line = (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device "
        "at /pytorch/torch/csrc/cuda/Module.cpp:123\n"
    )
    f = _first(line)
    assert f.severity.value == "warning" and "(extension-build-missing-arch)" not in f.message


NCCL_ATTACH = (
    "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:3690, unhandled system error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.27.7\n"
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n"
    "Last error:\n"
    "Error while attaching to shared memory segment /dev/shm/nccl-Qx1 (size 0), "
    "error: No such file or directory (2)\n"
)


def test_nccl_shm_attach_names_the_shm_transport_and_its_switch():
    """NCCL's attach wording (NVIDIA/nccl#2190, vllm-project/vllm#18831): several causes, one switch
    that holds for each of them: the log's failure is the entry's, an error (its fix's
    ``NCCL_SHM_DISABLE=1`` is a variable, not a release)."""
    found = [f for f in findings(scan_bytes(NCCL_ATTACH)) if "(nccl-shm-attach-failed)" in f.message]
    assert found and found[0].severity.value == "error"
    assert "NCCL_SHM_DISABLE=1" in found[0].fix
    nccl = [f for f in findings(scan_bytes(NCCL_ATTACH)) if f.rule == "TRI002"]
    assert (
        nccl and nccl[0].severity.value == "warning" and "NCCL's own last error (line 4)" in nccl[0].message
    )
    create = NCCL_ATTACH.replace("attaching to", "creating")
    assert not [f for f in findings(scan_bytes(create)) if "(nccl-shm-attach-failed)" in f.message]


@pytest.mark.parametrize(
    "value",
    [
        "/root/verl/recipe/retool/model/Qwen2.5-32B-Instruct",
        "./hf_models/gpt2",
        "../input/deberta/deberta",
        "",
    ],
)
def test_a_path_read_as_a_hub_id_is_a_missing_local_model(value):
    """huggingface_hub's validate_repo_id on a path from_pretrained could not load from (a Kaggle
    notebook's ../input, a container's /app/model, an unset variable's '')."""
    line = (
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
        f"'namespace/repo_name': '{value}'. Use `repo_type` argument if needed.\n"
    )
    f = _first(line)
    assert f.severity.value == "error" and "(local-model-path-missing-read-as-hub-id)" in f.message
    assert "config.json" in f.fix


def test_a_hub_id_refused_for_its_characters_is_not_a_missing_path():
    line = (
        "huggingface_hub.errors.HFValidationError: Repo id must use alphanumeric chars or '-', '_', '.', "
        "'--' and '..' are forbidden, '-' and '.' cannot start or end the name, "
        "max length is 96: 'my model'.\n"
    )
    found = [
        f for f in findings(scan_bytes(line)) if "(local-model-path-missing-read-as-hub-id)" in f.message
    ]
    assert not found


def test_version_parts_of_an_old_packaging_are_its_release():
    f = _first("AttributeError: 'Version' object has no attribute 'major'\n")
    assert f.severity.value == "error" and "(packaging-version-parts-before-20)" in f.message
    assert f.fix.startswith("pip install -U 'packaging>=20.0'")
    other = findings(scan_bytes("AttributeError: 'LegacyVersion' object has no attribute 'major'\n"))
    assert not [g for g in other if "(packaging-version-parts-before-20)" in g.message]


def test_flash_attention_2_refused_by_transformers_names_sdpa():
    full = (
        "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: "
        "the package flash_attn seems to be not installed. Please refer to the documentation of "
        "https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 "
        "to install Flash Attention 2.\n"
    )
    for line in (full, "ImportError: FlashAttention2 has been toggled on, but it cannot be used\n"):
        f = _first(line)
        assert f.severity.value == "error" and "(flash-attention-2-requested-unusable)" in f.message
        assert 'attn_implementation="sdpa"' in f.fix
    quiet = findings(scan_bytes("Using FlashAttention2 for the attention layers\n"))
    assert not [g for g in quiet if "(flash-attention-2-requested-unusable)" in g.message]


# -- the launch line: a legacy launcher's --local_rank, an option left empty -------------------------

LOCAL_RANK = [
    (  # heldout-2026-11-29h/logs16c/005: DeepSpeed's launcher in front of a sub-command CLI
        '  File "/home/u/env/lib/python3.10/site-packages/llmtuner/cli.py", line 75, in main\n'
        '    raise NotImplementedError("Unknown command: {}".format(command))\n'
        "NotImplementedError: Unknown command: --local_rank=0\n"
    ),
    "train.py: error: unrecognized arguments: --local-rank=0\n",  # torch.distributed.launch, torch >= 2.0
    "ValueError: Some specified arguments are not used by the HfArgumentParser: ['--local_rank=1']\n",
]


@pytest.mark.parametrize("log", LOCAL_RANK)
def test_a_launcher_passing_local_rank_to_a_parser_without_it_is_an_error_naming_torchrun(log):
    f = _first(log)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(launcher-passes-local-rank-argument)" in f.message
    assert "torchrun" in f.fix and "--no_local_rank" in f.fix


def test_a_local_rank_beside_other_refused_arguments_is_the_programs_usage_error():
    f = _first("train.py: error: unrecognized arguments: --local_rank=0 --lr 1e-5\n")
    assert f.rule == "TRI010"


def test_another_unrecognized_argument_is_not_the_launchers():
    assert not _entry(
        "train.py: error: unrecognized arguments: --learning-rate=1e-5\n",
        "launcher-passes-local-rank-argument",
    )


EMPTY = (  # heldout-2026-11-29h/logs16c/008: `--master-port=$master_port` with master_port empty
    "+ torchrun --nnodes=1 --nproc_per_node=8 --master-addr= --master-port= --node-rank= "
    "-m verl.trainer.fsdp_sft_trainer\n"
    "usage: torchrun [-h] [--nnodes NNODES] [--nproc-per-node NPROC_PER_NODE]\n"
    "torchrun: error: argument --master-port/--master_port: invalid int value: ''\n"
)


def test_an_option_given_an_empty_value_is_an_error_to_set_the_variable_or_go_standalone():
    f = _first(EMPTY)
    assert (
        f.rule == "TRI011" and f.severity.value == "error"
    )  # the fix sets a variable (`=29500`): no release
    assert "(launch-option-empty-value)" in f.message
    assert "export NAME=VALUE" in f.fix and "MASTER_PORT=29500" in f.fix and "--standalone" in f.fix


def test_an_option_given_a_wrong_but_present_value_is_not_an_empty_one():
    log = "torchrun: error: argument --master-port/--master_port: invalid int value: 'abc'\n"
    assert not _entry(log, "launch-option-empty-value")


# -- the Hub out of reach, vLLM without the model's config -------------------------------------------

HUB = [
    "socket.gaierror: [Errno -3] Temporary failure in name resolution\nFailed to resolve 'huggingface.co'\n",
    (
        "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find "
        "them in the cached files.\n"
    ),
    (
        "requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', "
        'port=443): Max retries exceeded with url: /api/models/Qwen/Qwen2.5-7B-Instruct"))\n'
    ),
    (
        "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache "
        "and outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set "
        "'local_files_only' to False.\n"
    ),
]


@pytest.mark.parametrize("log", HUB)
def test_the_hub_out_of_reach_is_an_error_to_download_first_and_run_offline(log):
    f = _first(log)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(hub-unreachable-files-not-cached)" in f.message
    assert "HF_HUB_OFFLINE=1" in f.fix and "huggingface-cli download" in f.fix


def test_another_host_out_of_reach_is_not_the_hub():
    log = (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.wandb.ai', port=443): "
        "Max retries exceeded\n"
    )
    assert not _entry(log, "hub-unreachable-files-not-cached")
    assert not _entry("Failed to resolve 'node-3.cluster.local'\n", "hub-unreachable-files-not-cached")


def test_a_run_that_trains_after_a_retried_lookup_is_quiet():
    log = (
        "WARNING Retrying (Retry(total=4)) after connection broken by NameResolutionError: Failed to "
        "resolve 'huggingface.co'\n"
        + "".join(
            f"{{'loss': 0.{i}, 'grad_norm': 1.0, 'learning_rate': 1e-06, 'epoch': 0.0{i}}}\n"
            for i in range(1, 6)
        )
    )
    assert not _entry(log, "hub-unreachable-files-not-cached")


VLLM_NO_CONFIG = [
    "ValueError: Could not detect config format for no config file found.\n",
    # vLLM 0.6's wording (unsloth/Llama-3.3-70B-Instruct-GGUF's discussion #2: a GGUF repository)
    "ValueError: No supported config format found in unsloth/Llama-3.3-70B-Instruct-GGUF\n",
    (
        "(APIServer pid=6398) ValueError: Invalid repository ID or local directory specified: "
        "'/models/qwen-lora'.\nPlease verify the following requirements:\n"
    ),
]


@pytest.mark.parametrize("log", VLLM_NO_CONFIG)
def test_vllm_without_the_models_config_is_an_error_to_pass_the_folder_holding_it(log):
    f = _first(log)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(vllm-model-config-not-found)" in f.message
    assert "config.json" in f.fix and "absolute path" in f.fix and "--tokenizer" in f.fix  # GGUF too


def test_another_config_format_message_is_not_vllms():
    assert not _entry(
        "ValueError: Could not detect the config format of x.toml\n", "vllm-model-config-not-found"
    )


NO_GROUP = (
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/c10d_logger.py", line 81, in wrapper\n'
    "    return func(*args, **kwargs)\n"
    "ValueError: Default process group has not been initialized, please make sure to call "
    "init_process_group.\n"
)


def test_a_collective_without_a_process_group_is_an_error_to_launch_ranks_or_guard_the_call():
    f = _first(NO_GROUP)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "(torch-distributed-call-without-process-group)" in f.message
    assert "torchrun" in f.fix and "is_initialized()" in f.fix


def test_a_process_group_already_initialised_is_not_this_entry():
    log = "RuntimeError: trying to initialize the default process group twice!\n"
    assert not _entry(log, "torch-distributed-call-without-process-group")


# -- a tokenizer without a pad token; LoRA target modules the model does not have ---------------------

PAD = (
    "ValueError: Asking to pad but the tokenizer does not have a padding token. Please select a token to "
    "use as `pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)` or add a new pad token via "
    "`tokenizer.add_special_tokens({'pad_token': '[PAD]'})`.\n"
)


def test_padding_without_a_pad_token_is_an_error_to_set_one():
    f = _first(PAD)
    assert f.rule == "TRI011" and f.severity.value == "error" and "(tokenizer-without-pad-token)" in f.message
    assert "tokenizer.pad_token = tokenizer.eos_token" in f.fix


TARGETS = [
    "ValueError: Target modules ^(model\\.language_model.*)$ not found in the base model\n",
    (
        "ValueError: Target modules {'q_proj', 'v_proj'} not found in the base model. Please check the "
        "target modules and try again.\n"
    ),
]


@pytest.mark.parametrize("log", TARGETS)
def test_lora_target_modules_the_model_lacks_is_an_error_to_list_its_modules(log):
    f = _first(log)
    assert (
        f.rule == "TRI011"
        and f.severity.value == "error"
        and "(peft-target-modules-not-in-model)" in f.message
    )
    assert "named_modules()" in f.fix and "all-linear" in f.fix


def test_other_padding_and_module_messages_are_not_these_entries():
    assert not _entry(
        "ValueError: Asking to truncate to max_length but no maximum length is provided\n",
        "tokenizer-without-pad-token",
    )
    assert not _entry(
        "KeyError: 'Target module lm_head is not a linear layer'\n", "peft-target-modules-not-in-model"
    )


EOS_PLACEHOLDER = (  # unslothai/unsloth#2797
    "ValueError: The specified `eos_token` ('<EOS_TOKEN>') is not found in the vocabulary of the given "
    "`processing_class` (Qwen2TokenizerFast). Ensure that the `eos_token` exists in the vocabulary before "
    "using it as an EOS token.\n"
)


def test_unsloths_eos_placeholder_is_an_error_to_import_unsloth_first():
    f = _first(EOS_PLACEHOLDER)
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert (
        "(unsloth-imported-after-trl-eos-placeholder)" in f.message and "import unsloth before trl" in f.fix
    )


def test_a_real_token_missing_from_the_vocabulary_is_not_unsloths_placeholder():
    log = EOS_PLACEHOLDER.replace("<EOS_TOKEN>", "<|im_end|>")
    assert not _entry(log, "unsloth-imported-after-trl-eos-placeholder")
