# ruff: noqa: E501 - log lines are quoted as programs print them
"""Any project's own check, read from the message's grammar (guards.py: TRI012, TRI018, TRI019,
TRI022), the lines other programs print (toollines.py: pip TRI020, a device-side index assertion
TRI021, the OOM killer TRI018), an override's arity against transformers' shown call (TRI009), a
module not installed quoted bare (TRI013) and a signature's line that no anchor found: each fires on
its shape and stays quiet on a look-alike. The texts are synthetic, written in the grammar the
programs print."""

from __future__ import annotations

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes


def _all(text: str):
    return findings(scan_bytes(text))


def _one(text: str):
    found = _all(text)
    assert len(found) == 1, found
    return found[0]


def _rules(text: str) -> list[tuple[str, str]]:
    return [(f.rule, f.severity.value) for f in _all(text)]


# -- an option that needs what the environment lacks ------------------------------------------------


def test_an_option_that_needs_a_missing_extension_names_the_option_and_its_other_value():
    f = _one(
        "RuntimeError: FusedLayer was called with bias_fusion set to True but the custom kernel fused_bias_cuda "
        "is not found. To use bias_fusion you must install the kernels with --cuda_ext. Otherwise, you must turn off bias fusion.\n"
    )
    assert (f.rule, f.severity) == ("TRI012", Severity.ERROR)
    assert "FusedLayer runs with bias_fusion=True" in f.message
    assert f.fix.startswith("set bias_fusion: False") and "install the kernels with --cuda_ext" in f.fix


def test_a_missing_file_without_an_option_is_no_option_refusal():
    assert _rules("RuntimeError: the checkpoint file model.bin is not found.\n") == [("TRI003", "warning")]


# -- a split that does not divide -------------------------------------------------------------------


def test_an_equal_split_that_does_not_divide_names_both_numbers_and_a_multiple():
    f = _one("AssertionError: only support equal chunk. Got size of Batch 6 and chunk 4.\n")
    assert (f.rule, f.severity) == ("TRI012", Severity.ERROR)
    assert (
        "of 6 does not split into 4" in f.message and "(e.g. 8)" in f.fix and "split it 2 or 3 ways" in f.fix
    )
    found = _one("ValueError: train_batch_size (10) must be divisible by world_size (4).\n")
    assert found.rule == "TRI012" and "that world_size (4) divide train_batch_size (10)" in found.message
    assert found.fix.startswith("set world_size to a divisor of 10 (2, 5)")
    heads = _one(
        "ValueError: Total number of attention heads (52) must be divisible by tensor parallel size (3).\n"
    )
    # placed in vLLM by the raise-site index: the setting by its name, and where the run sets it
    assert "set tensor_parallel_size (tensor parallel size) to a divisor of 52 (2, 4, 13, 26)" in heads.fix
    assert "GRPOConfig vllm_tensor_parallel_size" in heads.fix


def test_a_split_whose_numbers_divide_is_not_this_failure():
    found = _all("AssertionError: only support equal chunk. Got size of Batch 8 and chunk 4.\n")
    assert not any("does not split" in f.message for f in found)


# -- a divisor the configuration made zero ----------------------------------------------------------

ZERO = """\
(main_task pid=1) Traceback (most recent call last):
(main_task pid=1)   File "/home/u/proj/rlstack/workers/critic.py", line 54, in __init__
(main_task pid=1)     assert self.config.mini_batch_size % self.config.micro_batch_size == 0
(main_task pid=1) ZeroDivisionError: integer division or modulo by zero
"""


def test_a_zero_divisor_on_a_checks_line_names_the_option_that_became_zero():
    f = _one(ZERO)
    assert (f.rule, f.severity) == ("TRI012", Severity.ERROR)
    assert "divides by micro_batch_size, which is 0 there" in f.message
    assert "a divisor of mini_batch_size" in f.fix


def test_a_zero_divisor_by_a_local_count_is_no_configuration():
    text = ZERO.replace(
        "assert self.config.mini_batch_size % self.config.micro_batch_size == 0", "mean = total / n"
    )
    assert all(r != "TRI012" for r, _ in _rules(text))


def test_a_rays_deduplicated_warning_line_is_not_the_first_failure():
    text = (
        "(pid=3) /env/lib/python3.9/site-packages/vllm/connections.py:8: RuntimeWarning: Failed to read commit hash: [repeated 2x across cluster]\n"
        "(pid=3) No module named 'vllm._version' [repeated 2x across cluster]\n"
        "(pid=3)   from vllm.version import __version__ as VLLM_VERSION [repeated 2x across cluster]\n"
    )
    assert _all(text) == []
    assert _rules(text + ZERO)[0] == ("TRI012", "error")


# -- any package's check naming an option and the value it demands ------------------------------------


def test_a_guard_of_any_project_naming_an_option_and_its_demand_is_a_refusal():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/proj/myrl/trainer/config.py", line 88, in validate\n'
        '    raise ValueError(f"rollout_batch_size must be at least num_workers, got {a} < {b}")\n'
        "ValueError: rollout_batch_size must be at least num_workers, got 2 < 8\n"
    )
    f = _one(text)
    assert (f.rule, f.severity) == ("TRI012", Severity.ERROR)
    assert "rollout_batch_size" in f.message and "rollout_batch_size" in f.fix


def test_a_value_error_of_data_raised_below_the_frame_is_no_refusal():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/proj/myrl/data.py", line 12, in load\n'
        "    rows = parse(path)\n"
        "ValueError: the dataset row_count must be positive\n"
    )
    assert all(r != "TRI012" for r, _ in _rules(text))


# -- the host out of memory -------------------------------------------------------------------------

RAY_OOM = """\
ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
Memory on the node (IP: 10.0.0.1, ID: ab) where the task (task ID: cd, name=main_task, pid=7, memory used=0.51GB) was running was 60.00GB / 64.00GB (0.9375), which exceeds the memory usage threshold of 0.9. Ray killed this worker (ID: ef) because it was the most recently scheduled task. Top 10 memory users:
PID     MEM(GB) COMMAND
11      20.00   ray::Worker.generate
12      19.50   ray::Worker.generate
7       0.51    ray::main_task
"""


def test_rays_memory_monitor_is_the_hosts_ram_with_the_largest_holder():
    f = _one(RAY_OOM)
    assert (f.rule, f.severity) == ("TRI018", Severity.ERROR)
    assert "host memory (RAM, not GPU memory)" in f.message and "60.00 GB of 64.00 GB" in f.message
    assert "ray::Worker.generate (2 processes, 39.5 GB)" in f.message


def test_the_oom_killer_is_an_error_and_a_bare_sigkill_a_warning():
    assert _rules("[12345.6] Out of memory: Killed process 4242 (python) total-vm:1kB\n") == [
        ("TRI018", "error")
    ]
    assert _rules("torch.distributed.elastic: exitcode  : -9 (pid: 77)\n")[0] == ("TRI018", "warning")


def test_a_gpu_oom_is_not_the_hosts():
    text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    assert all(r != "TRI018" for r, _ in _rules(text))


# -- a version requirement refused -----------------------------------------------------------------


def test_require_versions_refusal_names_the_range_and_the_found_release():
    f = _one(
        "ImportError: peft>=0.11,<0.13 is required for a normal functioning of this module, but found peft==0.14.0.\n"
        "To fix: run `pip install peft>=0.11,<0.13` or set `DISABLE_VERSION_CHECK=1` to skip this check.\n"
    )
    assert (f.rule, f.severity) == ("TRI019", Severity.ERROR)
    assert "requires peft>=0.11,<0.13" in f.message and "peft 0.14.0," in f.message
    assert f.fix.startswith("pip install 'peft>=0.11,<0.13'") and "DISABLE_VERSION_CHECK=1" in f.fix


def test_the_requirement_cut_after_is_required_still_names_the_range():
    """A one-line paste stopped after "is required" (set 16, not held out): the range is the fix."""
    f = _one("ImportError: tokenizers>=0.21,<0.22 is required\n")
    assert (f.rule, f.severity) == ("TRI019", Severity.ERROR)
    assert "requires tokenizers>=0.21,<0.22" in f.message
    assert f.fix.startswith("pip install 'tokenizers>=0.21,<0.22'")
    assert all(r != "TRI019" for r, _ in _rules("ValueError: tokenizers>=0.21 is required\n"))
    assert all(r != "TRI019" for r, _ in _rules("ImportError: tokenizers>=0.21 is required to load X\n"))


def test_an_import_error_without_the_requirement_grammar_is_not_it():
    assert all(r != "TRI019" for r, _ in _rules("ImportError: peft is required for this module.\n"))


# -- a name nothing registered ---------------------------------------------------------------------


def test_an_unregistered_name_is_named_with_where_it_comes_from():
    f = _one("ValueError: No environment registered with name 'sokoban_v0'\n")
    assert (f.rule, f.severity) == ("TRI022", Severity.ERROR)
    assert "environment 'sokoban_v0'" in f.message and "config or the data" in f.fix


def test_a_registered_word_in_another_sentence_is_not_it():
    assert all(r != "TRI022" for r, _ in _rules("ValueError: the tool returned no registered output\n"))


# -- pip --------------------------------------------------------------------------------------------


def test_pips_errors_name_the_cause():
    f = _one(
        "ERROR: file:///work/proj/sub does not appear to be a Python project: neither 'setup.py' nor 'pyproject.toml' found.\n"
    )
    assert (f.rule, f.severity) == ("TRI020", Severity.ERROR) and "pip install -e /work/proj" in f.fix
    f = _one(
        "ERROR: Could not find a version that satisfies the requirement vllm==0.99.0 (from versions: 0.8.5, 0.9.0, 0.9.1)\n"
        "ERROR: No matching distribution found for vllm==0.99.0\n"
    )
    assert f.rule == "TRI020" and "0.9.1" in f.fix
    # an exact pin between the releases pip lists was published with no file for this platform
    # (verl's FAQ, not held out: tensordict 0.6.2 has no linux-aarch64 wheel and no sdist; 0.8.x,
    # the newest listed, breaks verl): build the pinned release, not "require 0.8.3"
    f = _one(
        "ERROR: Could not find a version that satisfies the requirement tensordict==0.6.2 (from versions: "
        "0.0.3, 0.1.0, 0.1.1, 0.1.2, 0.8.0, 0.8.1, 0.8.2, 0.8.3)\n"
        "ERROR: No matching distribution found for tensordict==0.6.2\n"
    )
    assert f.rule == "TRI020" and "published with no file that fits" in f.message
    assert f.fix.startswith("build tensordict 0.6.2 from its source") and "only where" in f.fix
    # a Colab log (xformers 0.0.19 has wheels for cp38-cp310 only): the neighbours are said, and the
    # release offered is the nearest final one above the pin, not the newest dev build pip lists
    f = _one(
        "ERROR: Could not find a version that satisfies the requirement xformers==0.0.19 (from versions: "
        "0.0.13, 0.0.16rc424, 0.0.16, 0.0.20, 0.0.21, 0.0.29.post3, 0.0.30.dev989, 0.0.30.dev1002)\n"
        "ERROR: No matching distribution found for xformers==0.0.19\n"
    )
    assert "(0.0.16 and 0.0.20)" in f.message and "(e.g. 0.0.20)" in f.fix and "dev" not in f.fix
    f = _one(
        "ERROR: Could not find a version that satisfies the requirement xformers==0.1.0 (from versions: "
        "0.0.29.post3, 0.0.30.dev1002)\n"
    )
    assert "(e.g. 0.0.29.post3)" in f.fix
    f = _one(
        "ERROR: Cannot install a==1 and b==2 because these package versions have conflicting dependencies.\n"
        "The conflict is caused by:\n    a 1 depends on torch==2.5.1\n    b 2 depends on torch==2.6.0\n"
    )
    assert f.rule == "TRI020" and "a 1 depends on torch==2.5.1" in f.message
    f = _one(
        "      OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.\n  Failed building wheel for flash-attn\n"
    )
    assert f.rule == "TRI020" and "flash-attn" in f.message


def test_a_pip_line_that_is_no_error_is_quiet():
    assert _all("Successfully installed vllm-0.8.5\nRequirement already satisfied: torch\n") == []


# -- a device-side index assertion ------------------------------------------------------------------


def test_an_index_assertion_is_a_token_id_beyond_the_embedding():
    f = _one(
        "../aten/src/ATen/native/cuda/Indexing.cu:1284: indexSelectLargeIndex: block: [1,0,0], thread: [6,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
    )
    assert (f.rule, f.severity) == ("TRI021", Severity.ERROR) and "resize_token_embeddings" in f.fix


def test_another_device_assertion_is_not_it():
    text = "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward: block: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
    assert all(r != "TRI021" for r, _ in _rules(text))


# -- an override's arity against transformers' own call --------------------------------------------

OVERRIDE = """\
[rank0]:   File "/env/lib/python3.11/site-packages/transformers/trainer.py", line 2508, in _inner_training_loop
[rank0]:     batch_samples, num_items_in_batch = self.get_batch_samples(epoch_iterator, num_batches, args.device)
[rank0]: TypeError: MyGRPOTrainer.get_batch_samples() takes 3 positional arguments but 4 were given
"""


def test_an_overrides_arity_against_transformers_shown_call_is_drift():
    f = _one(OVERRIDE)
    assert (f.rule, f.severity) == ("TRI009", Severity.ERROR)
    assert "without a parameter for args.device" in f.message
    assert "self.get_batch_samples(epoch_iterator, num_batches, args.device)" in f.fix


def test_an_arity_error_whose_shown_call_does_not_fit_is_not_that_drift():
    text = OVERRIDE.replace("num_batches, args.device)", "num_batches)")
    assert all(r != "TRI009" or s != "error" for r, s in _rules(text))


# -- a module not installed, quoted bare; a stack package missing ------------------------------------


def test_a_bare_missing_module_is_a_missing_install():
    f = _one("No module named 'math_verify'\n")
    assert (f.rule, f.severity) == ("TRI013", Severity.ERROR) and "pip install math-verify" in f.fix


def test_a_stack_package_not_installed_is_a_warning_with_both_readings():
    f = _one("ModuleNotFoundError: No module named 'vllm'\n")
    assert (f.rule, f.severity) == ("TRI013", Severity.WARNING) and "does so although" in f.message


# -- a signature's line that no anchor found --------------------------------------------------------


def test_a_reworded_vllm_startup_memory_refusal_without_numbers_is_found():
    f = _one(
        "vLLMAsyncRollout _loop_forever error: Free memory on device on startup is less than desired GPU memory utilization (0.8)\n"
    )
    assert (f.rule, f.severity) == ("MEM001", Severity.ERROR) and "torch.cuda.empty_cache()" in f.fix


def test_a_line_that_only_mentions_the_words_is_quiet():
    assert _all("note: we set gpu memory utilization to 0.8 on startup\n") == []


# -- every shape of running out of memory ---------------------------------------------------------


def test_a_librarys_allocation_failure_on_the_gpu_is_cuda_out_of_memory():
    for text, lib in (
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n",
            "cuBLAS",
        ),
        ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_ENOUGH_MEMORY\n", "cuDNN"),
        ("RuntimeError: CUDA driver error: out of memory\n", "the CUDA driver"),
    ):
        f = _one(text)
        assert (f.rule, f.severity) == ("TRI001", Severity.ERROR) and f"where {lib} allocated" in f.message
    f = _one(
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 'out of memory'\n"
    )
    assert (f.rule, f.severity) == ("TRI001", Severity.ERROR) and "NCCL could not allocate" in f.message
    # a driver call's WARN carries the error's number (NCCL's CUCHECK: "Cuda failure 2 '...'")
    f = _one(
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 2 'out of memory'\n"
    )
    assert (f.rule, f.severity) == ("TRI001", Severity.ERROR) and "NCCL could not allocate" in f.message


def test_an_unhandled_cuda_error_that_does_not_say_which_sends_to_ncclls_own_line():
    """Set 21's a004: NCCL's "unhandled cuda error" in a backward's reduce-scatter with no "Last
    error" line (an out-of-memory, settled): the fix is the line that tells, not NCCL's network."""
    f = _one(
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.28.9\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
    )
    assert f.rule == "TRI002" and "does not show which" in f.message
    assert "NCCL_DEBUG=WARN" in f.fix and "'out of memory'" in f.fix and "NCCL_SOCKET_IFNAME" not in f.fix


def test_an_nccl_cuda_error_of_another_kind_stays_nccls():
    text = (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 'invalid device ordinal'\n"
    )
    assert _rules(text)[0][0] == "TRI002"


def test_the_cpu_allocator_and_a_shell_kill_are_the_hosts_memory():
    f = _one(
        "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes.\n"
    )
    assert (f.rule, f.severity) == ("TRI018", Severity.ERROR)
    assert _rules("step 10 loss 0.1\nKilled\n") == [("TRI018", "warning")]
    assert _all("step 10 loss 0.1\nthe job was not killed\n") == []


def test_a_user_notebook_importing_a_stack_package_is_left_to_the_first_exception():
    text = (
        "[/tmp/ipykernel_1/1.py](https://localhost:8080/#) in <cell line: 0>()\n"
        "----> 2 from vllm import LLM\n\nModuleNotFoundError: No module named 'vllm'\n"
    )
    assert all(r != "TRI013" for r, _ in _rules(text))


# -- a keyword no release of the callee takes, the caller not shown ---------------------------------

ENGINE_ARGS = """\
(TaskRunner pid=1)   File "/env/lib/python3.10/site-packages/vllm/entrypoints/llm.py", line 247, in __init__
(TaskRunner pid=1)     engine_args = EngineArgs(
(TaskRunner pid=1) TypeError: EngineArgs.__init__() got an unexpected keyword argument 'model_hf_config'
"""


def test_a_keyword_no_release_takes_with_the_caller_cut_off_is_likely_drift():
    f = _one(ENGINE_ARGS)
    assert (f.rule, f.severity) == ("TRI009", Severity.WARNING)
    assert "which no vllm release from 0.7.2" in f.message and "release the calling code pins" in f.fix


def test_a_keyword_some_release_takes_is_not_this_answer():
    found = _all(ENGINE_ARGS.replace("model_hf_config", "max_model_len"))
    assert not any("which no vllm release" in f.message for f in found)


def test_a_check_that_two_options_are_unequal_says_make_them_equal():
    f = _one(
        "RuntimeError: world_size (6) is not equal to tensor_parallel_size (4) x pipeline_parallel_size (1)\n"
    )
    assert (f.rule, f.severity) == ("TRI012", Severity.ERROR)
    assert f.fix.startswith(
        "make world_size (6) equal to tensor_parallel_size (4) x pipeline_parallel_size (1)"
    )
    assert all(
        r != "TRI012" for r, _ in _rules("RuntimeError: the hash (ab12) is not equal to the expected one\n")
    )


def test_an_asserts_words_that_refuse_nothing_and_a_libraries_capitalised_word_are_no_refusal():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/proj/tuner/loader.py", line 213, in load\n'
        '    assert load_valuehead_params(model, model_args.reward_model), "Reward model is not correctly loaded."\n'
        "AssertionError: Reward model is not correctly loaded.\n"
    )
    assert all(r != "TRI012" for r, _ in _rules(text))
    assert all(
        r != "TRI012" for r, _ in _rules("AssertionError: Padding_idx must be within num_embeddings\n")
    )


def test_a_bare_kill_does_not_hide_another_exception_but_explains_a_wrappers():
    other = "ValueError: something nobody knows\nKilled\n"
    assert _rules(other)[0] == ("TRI003", "warning")
    wrapper = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "train.py FAILED\nFailures:\n  <NO_OTHER_FAILURES>\nRoot Cause (first observed failure):\n"
        "  exitcode  : -9 (pid: 77)\n"
    )
    assert ("TRI018", "warning") in _rules(wrapper)


def test_a_tensor_name_or_a_functions_kwarg_is_not_the_runs_configuration():
    """vLLM refusing a weight a wrapper sent ("model.embed_tokens.weight is unsupported LoRA
    weight") and torch demanding a keyword argument of its own API ("Optional kwarg `mesh_dim`
    needs to be specified") name what the calling code handed over, not an option of the run: no
    config-refusal error. A refusal of the run's reward weights still is one."""
    lora = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/vllm/lora/utils.py", line 150, in parse_fine_tuned_lora_name\n'
        '    raise ValueError(f"{name} is unsupported LoRA weight")\n'
        "ValueError: model.embed_tokens.weight is unsupported LoRA weight\n"
    )
    mesh = (
        "RuntimeError: ('Found the DeviceMesh have 2 dimensions', 'Optional kwarg `mesh_dim` needs "
        "to be specified when device_mesh.ndim > 1 .')\n"
    )
    for text in (lora, mesh):
        assert not [f for f in _all(text) if f.rule == "TRI012" and f.severity.value == "error"]
    weights = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/trl/trainer/grpo_trainer.py", line 500, in __init__\n'
        "    raise ValueError(\n"
        "ValueError: Number of reward weights (2) must match number of reward functions (3)\n"
    )
    assert [f for f in _all(weights) if f.rule == "TRI012" and f.severity.value == "error"]


# -- pip's report of a requirement it left broken (TRI020) --------------------------------------

BROKEN_REQ = (
    "ERROR: pip's dependency resolver does not currently take into account all the packages that are "
    "installed. This behaviour is the source of the following dependency conflicts.\n"
    "vllm 0.17.1 requires transformers<5,>=4.56.0, but you have transformers 5.3.0 which is incompatible.\n"
)
CRASH_AFTER = (
    'File "/env/lib/python3.11/site-packages/transformers/modeling_rope_utils.py", line 651, in f\n'
    "    x = x | {1}\n"
    "TypeError: unsupported operand type(s) for |: 'list' and 'set'\n"
)


def test_a_broken_stack_requirement_pip_reported_is_named_with_the_pair_it_requires():
    (f,) = findings(scan_bytes(BROKEN_REQ))
    assert f.rule == "TRI020" and f.severity.value == "warning"
    assert "vllm 0.17.1 does not accept" in f.message and "pip install 'transformers<5,>=4.56.0'" in f.fix
    (g,) = findings(scan_bytes(BROKEN_REQ + CRASH_AFTER))  # then the run fails in one of the two
    assert g.rule == "TRI020" and g.severity.value == "error"


def test_a_broken_requirement_outside_the_stack_or_before_training_steps_is_quiet():
    colab = BROKEN_REQ.replace(
        "vllm 0.17.1 requires transformers<5,>=4.56.0", "google-colab 1.0.0 requires requests==2.31.0"
    ).replace("you have transformers 5.3.0", "you have requests 2.32.3")
    assert findings(scan_bytes(colab)) == []
    trained = BROKEN_REQ + "{'loss': 0.12, 'grad_norm': 1.0, 'learning_rate': 1e-06, 'epoch': 0.01}\n"
    assert findings(scan_bytes(trained)) == []
