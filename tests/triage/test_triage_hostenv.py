# ruff: noqa: E501 - log lines are quoted as programs print them
"""Causes of the host, the hardware and the libraries beneath the stack (hostenv.py: TRI025-TRI030,
SGLang's version assert as TRI019): each fires on its shape and stays quiet on a look-alike. The
texts are synthetic, written in the grammar the programs print."""

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


# -- TRI025: GPUs without peer access ----------------------------------------------------------------

NCCL_217 = """\
torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3353, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2
ncclUnhandledCudaError: Call to CUDA function failed.
Last error:
Cuda failure 217 'peer access is not supported between these two devices'
"""


def test_nccl_error_217_is_peer_access_with_the_p2p_switch():
    f = _one(NCCL_217)
    assert (f.rule, f.severity) == ("TRI025", Severity.ERROR)
    assert "NCCL_P2P_DISABLE=1" in f.fix and "217" in f.message


def test_nccl_unhandled_cuda_error_on_an_l40s_is_a_warning():
    text = "GPU 0: NVIDIA L40S (UUID: GPU-1)\n" + NCCL_217.split("ncclUnhandledCudaError")[0]
    f = _one(text)
    assert (f.rule, f.severity) == ("TRI025", Severity.WARNING) and "L40S" in f.message


def test_nccl_unhandled_cuda_error_out_of_memory_is_not_peer_access():
    text = NCCL_217.replace("217 'peer access is not supported between these two devices'", "'out of memory'")
    assert all(r != "TRI025" for r, _ in _rules(text))


def test_nccl_unhandled_cuda_error_on_an_h100_says_nothing_of_p2p():
    text = "GPU 0: NVIDIA H100 80GB HBM3\n" + NCCL_217.split("ncclUnhandledCudaError")[0]
    assert all(r != "TRI025" for r, _ in _rules(text))


def test_peer_access_in_an_engines_custom_all_reduce_turns_it_off():
    f = _one(
        "Failed: Cuda error /build/csrc/custom_all_reduce.cuh:312 'peer access is not supported between these two devices'\n"
    )
    assert (f.rule, f.severity) == ("TRI025", Severity.ERROR)
    assert f.fix.startswith("turn the inference engine's custom all-reduce off")


def test_torch_peer_access_error_is_an_error_with_the_engine_switches():
    f = _one("RuntimeError: CUDA error: peer access is not supported between these two devices\n")
    assert (f.rule, f.severity) == ("TRI025", Severity.ERROR) and "NCCL_P2P_DISABLE=1" in f.fix


def test_flash_attention_below_ampere_is_an_error_with_sdpa():
    f = _one("RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n")
    assert (f.rule, f.severity) == ("TRI025", Severity.ERROR) and "attn_implementation='sdpa'" in f.fix


def test_no_kernel_image_with_torchs_capability_warning_names_the_build():
    f = _one(
        "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n"
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 125, in forward\n'
        "    return F.linear(input, self.weight, self.bias)\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert (f.rule, f.severity) == ("TRI025", Severity.ERROR)
    assert "sm_120" in f.message and "cu128" in f.fix


def test_no_kernel_image_alone_is_a_warning():
    f = _one("RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    assert (f.rule, f.severity) == ("TRI025", Severity.WARNING) and "TORCH_CUDA_ARCH_LIST" in f.fix


def test_rocm_without_a_code_object_names_the_gfx_target_and_the_wrong_build():
    f = _one(
        "RuntimeError: HIP error: hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
    )
    assert (f.rule, f.severity) == ("TRI025", Severity.WARNING) and "PYTORCH_ROCM_ARCH" in f.fix
    assert "CUDA build of torch" in f.fix  # a ROCm build on an NVIDIA machine says the same
    f = _one(
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\nAborted (core dumped)\n"
    )
    assert (f.rule, f.severity) == ("TRI025", Severity.WARNING)


def test_another_cuda_error_is_not_the_capability():
    text = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert all(r != "TRI025" for r, _ in _rules(text))


# -- TRI026: the process limit, fork's memory ------------------------------------------------------


def test_raylet_pthread_create_eagain_is_the_process_limit():
    f = _one(
        "(raylet) E0207 15:31:48.274232402    2915 thd.cc:157]   pthread_create failed: Resource temporarily unavailable\n"
        "(raylet) E0207 15:31:48.274260822    2915 thread_manager.cc:44]   Could not create grpc_sync_server worker-thread\n"
    )
    assert (f.rule, f.severity) == ("TRI026", Severity.ERROR)
    assert "ulimit -u" in f.fix and "under Ray" in f.message


def test_a_cxx_thread_refused_in_a_ray_worker_is_the_process_limit():
    f = _one(
        "(RolloutWorker pid=4242) [2026-01-02 10:11:12,131 E 4242 4250] logging.cc:112: Unhandled exception: "
        "N5boost10wrapexceptINS_6system12system_errorEEE. what(): thread: Resource temporarily unavailable [system:11]\n"
    )
    assert (f.rule, f.severity) == ("TRI026", Severity.ERROR) and "ulimit -u" in f.fix


def test_bash_fork_retry_is_the_process_limit():
    f = _one("-bash: fork: retry: Resource temporarily unavailable\n")
    assert (f.rule, f.severity) == ("TRI026", Severity.ERROR) and "ulimit -u" in f.fix


def test_too_many_open_files_under_ray_is_the_open_file_limit():
    f = _one(
        "(raylet) [2025-08-25 22:33:45,833 E 4164820 4164820] (raylet) worker_pool.cc:1239: Failed to send exit request: RpcError: RPC Error message: failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.1:4242: Too many open files\n"
    )
    assert (
        (f.rule, f.severity) == ("TRI026", Severity.ERROR)
        and "ulimit -n" in f.fix
        and "under Ray" in f.message
    )


def test_the_open_file_limit_printed_is_not_a_failure():
    assert _all("max open files (-n) 65535\nmax user processes (-u) 4096\n") == []


def test_a_thread_that_ends_is_not_the_limit():
    assert _all("INFO thread pool started 8 threads; fork server ready\n") == []


FORK = """\
Traceback (most recent call last):
  File "/env/lib/python3.12/site-packages/megatron/core/dist_checkpointing/strategies/async_utils.py", line 204, in schedule_async_call
    self.process.start()
  File "/usr/lib/python3.12/multiprocessing/process.py", line 121, in start
    self._popen = self._Popen(self)
  File "/usr/lib/python3.12/multiprocessing/popen_fork.py", line 66, in _launch
    self.pid = os.fork()
OSError: [Errno 12] Cannot allocate memory
"""


def test_fork_enomem_is_the_commit_of_a_large_parent():
    f = _one(FORK)
    assert (f.rule, f.severity) == ("TRI026", Severity.ERROR)
    assert "spawn" in f.fix and "megatron-core" in f.message


def test_enomem_elsewhere_is_not_fork():
    text = FORK.replace("    self.pid = os.fork()\n", "    data = mmap.mmap(-1, size)\n").replace(
        "in _launch", "in _read"
    )
    assert all(r != "TRI026" for r, _ in _rules(text))


# -- TRI027: a small /dev/shm ----------------------------------------------------------------------


def test_ray_object_store_in_tmp_is_a_warning_with_the_shm_size():
    f = _one(
        "2025-10-09 20:16:32,652    WARNING services.py:2159 -- WARNING: The object store is using /tmp instead\n"
        "  of /dev/shm because /dev/shm has only 5368709120 bytes available. This will harm performance! You may\n"
        "  be able to free up space by deleting files in /dev/shm. If you are inside a Docker container, you can\n"
        "  increase /dev/shm size by passing '--shm-size=10.24gb' to 'docker run' (or add it to the run_options\n"
    )
    assert (f.rule, f.severity) == ("TRI027", Severity.WARNING) and "--shm-size=10.24gb" in f.fix


def test_ray_object_store_warning_does_not_stand_in_for_a_crash():
    text = (
        "WARNING services.py:2159 -- WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only 5368709120 bytes available.\n"
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 3, in <module>\n'
        "    main()\n"
        "KeyError: 'reward'\n"
    )
    assert all(r != "TRI027" for r, _ in _rules(text))


def test_dataloader_bus_error_is_the_shared_memory():
    f = _one(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
    )
    assert (f.rule, f.severity) == ("TRI027", Severity.ERROR) and "--shm-size" in f.fix


def test_torch_shared_memory_file_full_is_the_shared_memory():
    f = _one("RuntimeError: unable to write to file </torch_1234_5678_0>: No space left on device (28)\n")
    assert (f.rule, f.severity) == ("TRI027", Severity.ERROR)


def test_a_full_disk_elsewhere_is_not_shared_memory():
    text = "OSError: [Errno 28] No space left on device: '/data/checkpoints/step_100/model.safetensors'\n"
    assert all(r != "TRI027" for r, _ in _rules(text))


# -- TRI028: a library called from a thread it does not support ------------------------------------


def test_already_borrowed_is_the_shared_fast_tokenizer():
    f = _one("RuntimeError: Already borrowed\n")
    assert (f.rule, f.severity) == ("TRI028", Severity.ERROR) and "deepcopy" in f.fix


def test_signal_in_a_thread_names_math_verify_timeouts():
    f = _one(
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.11/site-packages/math_verify/utils.py", line 50, in wrapper\n'
        "    signal.signal(signal.SIGALRM, handler)\n"
        "ValueError: signal only works in main thread of the main interpreter\n"
    )
    assert (f.rule, f.severity) == ("TRI028", Severity.ERROR) and "parsing_timeout=None" in f.fix


TRITON = """\
Traceback (most recent call last):
  File "/usr/lib/python3.12/concurrent/futures/_base.py", line 456, in result
    return self.__get_result()
  File "/usr/local/lib/python3.12/dist-packages/triton/runtime/_allocation.py", line 20, in __call__
    raise RuntimeError("Kernel requires a runtime memory allocation, but no allocator was set. " +
RuntimeError: Kernel requires a runtime memory allocation, but no allocator was set. Use triton.set_allocator to specify an allocator.
"""


def test_tritons_allocator_missing_in_a_thread_pool_is_the_context():
    f = _one(TRITON)
    assert (f.rule, f.severity) == ("TRI028", Severity.ERROR) and "ContextVar" in f.message


def test_tritons_allocator_missing_without_threads_is_a_warning():
    f = _one(TRITON.replace("concurrent/futures/_base.py", "myapp/run.py"))
    assert (f.rule, f.severity) == ("TRI028", Severity.WARNING) and "triton.set_allocator" in f.fix


def test_another_borrow_message_is_not_it():
    assert all(r != "TRI028" for r, _ in _rules("RuntimeError: value already borrowed by the cache\n"))


# -- TRI029: a member a library beneath the stack removed ------------------------------------------

NUMPY = """\
Traceback (most recent call last):
  File "/env/lib/python3.12/site-packages/megatron/core/dist_checkpointing/validation.py", line 522, in _validate_sharding_for_key_flattened
    expected_size = np.product(local_shape)
  File "/env/lib/python3.12/site-packages/numpy/__init__.py", line 414, in __getattr__
    raise AttributeError("module {!r} has no attribute "
AttributeError: module 'numpy' has no attribute 'product'
"""


def test_a_numpy_2_removal_names_the_caller_and_the_pin():
    f = _one(NUMPY)
    assert (f.rule, f.severity) == ("TRI029", Severity.ERROR)
    assert "numpy<2" in f.fix and "np.prod" in f.message and "megatron-core" in f.message


def test_a_numpy_1_24_alias_pins_below_1_24():
    f = _one(NUMPY.replace("np.product", "np.float").replace("'product'", "'float'"))
    assert (f.rule, f.severity) == ("TRI029", Severity.ERROR) and "numpy<1.24" in f.fix


def test_a_member_numpy_never_had_is_not_a_removal():
    text = NUMPY.replace("np.product", "np.frobnicate").replace("'product'", "'frobnicate'")
    assert all(r != "TRI029" for r, _ in _rules(text))


LIBRARY = """\
Traceback (most recent call last):
  File "/env/lib/python3.11/site-packages/prometheus_fastapi_instrumentator/routing.py", line 55, in _get_route_name
    routing.Match.FULL
  File "/env/lib/python3.11/site-packages/starlette/__init__.py", line 3, in __getattr__
    raise AttributeError(name)
AttributeError: module 'starlette.routing' has no attribute 'Match'
"""


def test_another_librarys_missing_member_is_drift_as_a_warning():
    f = _one(LIBRARY)
    assert (f.rule, f.severity) == ("TRI029", Severity.WARNING)
    assert "prometheus-fastapi-instrumentator" in f.message and "starlette" in f.fix


def test_the_users_own_code_reading_a_library_is_not_paired():
    text = LIBRARY.replace(
        "/env/lib/python3.11/site-packages/prometheus_fastapi_instrumentator/routing.py", "/home/me/app.py"
    )
    assert all(r != "TRI029" for r, _ in _rules(text))


# -- TRI030: a Ray actor whose torch sees no GPU ---------------------------------------------------

RAY = """\
ray.exceptions.RayTaskError(DeferredCudaCallError): ray::RewardModelRayActor.init_model_from_pretrained()
  File "/env/lib/python3.11/site-packages/torch/cuda/random.py", line 126, in cb
    default_generator = torch.cuda.default_generators[i]
IndexError: tuple index out of range

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/app/openrlhf/utils/deepspeed.py", line 87, in setup_distributed
    torch.cuda.set_device(self.args.local_rank)
  File "/env/lib/python3.11/site-packages/torch/cuda/__init__.py", line 338, in _lazy_init
    raise DeferredCudaCallError(msg) from e
torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: tuple index out of range
"""


def test_a_ray_actor_without_a_visible_gpu_is_a_warning_naming_both_platforms():
    f = _one(RAY)
    assert (f.rule, f.severity) == ("TRI030", Severity.WARNING)
    assert "RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES=1" in f.fix and "num_gpus" in f.fix


def test_on_a_rocm_host_it_is_an_error():
    f = _one("torch 2.5.1+rocm6.2\n" + RAY)
    assert (f.rule, f.severity) == ("TRI030", Severity.ERROR) and "HIP_VISIBLE_DEVICES" in f.fix


def test_vllms_own_process_prefix_is_not_ray():
    text = RAY.replace(
        "ray.exceptions.RayTaskError(DeferredCudaCallError): ray::RewardModelRayActor.init_model_from_pretrained()\n",
        "(EngineCore_DP0 pid=7) Traceback (most recent call last):\n",
    )
    assert all(r != "TRI030" for r, _ in _rules(text))


def test_the_same_index_error_outside_ray_is_not_it():
    text = RAY.replace(
        "ray.exceptions.RayTaskError(DeferredCudaCallError): ray::RewardModelRayActor.init_model_from_pretrained()\n",
        "Traceback (most recent call last):\n",
    )
    assert all(r != "TRI030" for r, _ in _rules(text))


# -- TRI019: a package's own minimum-version assert ------------------------------------------------


def test_sglang_version_assert_names_the_pin():
    f = _one(
        'File "/usr/local/lib/python3.10/dist-packages/sglang/srt/utils.py", line 647, in assert_pkg_version\n'
        "    raise Exception(\n"
        "Exception: sgl-kernel is installed with version 0.1.0, which is less than the minimum required version 0.1.1. Please reinstall the latest version with `pip install sgl-kernel --force-reinstall`\n"
    )
    assert (f.rule, f.severity) == ("TRI019", Severity.ERROR) and "sgl-kernel>=0.1.1" in f.fix


def test_a_version_at_the_minimum_said_in_prose_is_not_it():
    assert all(
        r != "TRI019"
        for r, _ in _rules("sgl-kernel 0.1.1 is installed and meets the minimum required version\n")
    )


# -- a pair of the web stack beneath vLLM's server (the catalogue, TRI011) --------------------------


def test_fastapis_included_router_under_the_instrumentator_is_the_pair():
    f = _one(
        'INFO:     127.0.0.1:33496 - "GET /health HTTP/1.1" 500 Internal Server Error\n'
        "AttributeError: '_IncludedRouter' object has no attribute 'path'\n"
        "  prometheus_fastapi_instrumentator/routing.py:55 in _get_route_name -> route.path\n"
    )
    assert (f.rule, f.severity) == ("TRI011", Severity.ERROR)
    assert "prometheus-fastapi-instrumentator>=8.0.2" in f.fix


def test_another_routes_missing_path_is_not_the_pair():
    text = "AttributeError: 'Mount' object has no attribute 'path_format'\n"
    assert all("prometheus" not in f.fix for f in _all(text))


# -- the host's libraries and devices by the message alone -----------------------------------------


def test_glibc_symbol_version_is_a_wheel_built_for_a_newer_os():
    f = _one(
        "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found (required by /env/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so)\n"
    )
    assert (f.rule, f.severity) == ("TRI029", Severity.ERROR) and "glibc" in f.fix


def test_glibcxx_symbol_version_is_an_older_libstdcxx():
    f = _one(
        "ImportError: /env/bin/../lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /env/lib/python3.10/site-packages/vllm/_C.abi3.so)\n"
    )
    assert (f.rule, f.severity) == ("TRI029", Severity.ERROR) and "libstdcxx-ng" in f.fix


def test_a_missing_shared_object_of_a_package_is_not_the_host():
    text = "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
    assert all(r not in ("TRI029", "TRI030") for r, _ in _rules(text))


def test_libcuda_missing_is_a_container_without_gpus():
    f = _one("ImportError: libcuda.so.1: cannot open shared object file: No such file or directory\n")
    assert (f.rule, f.severity) == ("TRI030", Severity.ERROR) and "--gpus all" in f.fix


def test_nvml_driver_mismatch_is_a_reboot():
    f = _one("Failed to initialize NVML: Driver/library version mismatch\n")
    assert (f.rule, f.severity) == ("TRI030", Severity.ERROR) and "reboot" in f.fix


def test_busy_devices_is_a_warning():
    f = _one("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n")
    assert (f.rule, f.severity) == ("TRI030", Severity.WARNING)


def test_an_ecc_error_is_a_hardware_fault():
    f = _one("RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    assert (f.rule, f.severity) == ("TRI025", Severity.ERROR) and "nvidia-smi -r" in f.fix


def test_ecc_mode_printed_is_not_a_fault():
    assert _all("| ECC: Disabled | Compute M.: Default |\nGPU 0 NVML library version: 550.54\n") == []


def test_the_driver_too_old_for_the_runtime_is_the_catalogues_driver_entry():
    f = _one("RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n")
    assert f.rule == "TRI011" and "driver" in f.fix
