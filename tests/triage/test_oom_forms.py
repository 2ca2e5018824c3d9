"""Out of memory in every form (rules/triage/oom_forms.yaml, envdoctor/triage/oomforms.py): which
memory ran out, who allocated it, and the levers that act on that memory. Each form fires on an
excerpt in the shape of a real log and stays quiet where a line only mentions memory."""

from __future__ import annotations

import pytest

from envdoctor.findings import Severity
from envdoctor.triage import oomforms
from envdoctor.triage.signatures import check_linear
from tests.triage.helpers import findings, scan_bytes


def _run(text: str):
    return findings(scan_bytes(text))


def _errors(text: str):
    return [f for f in _run(text) if f.severity == Severity.ERROR]


# -- the data -------------------------------------------------------------------------------------


def test_every_form_is_linear_cited_and_of_a_known_memory():
    forms = oomforms.forms()
    assert len({f.id for f in forms}) == len(forms) >= 10
    for f in forms:
        assert check_linear(f.pattern.pattern) is None
        assert f.memory in oomforms.MEMORIES and f.side in oomforms.SIDES
        assert all(r.startswith("https://") for r in f.references), f.id


@pytest.mark.parametrize(
    "line,form,memory",
    [
        (
            "Runtime Error: Cuda error: out of memory at /workspace/csrc/cumem_allocator.cpp: 62",
            "vllm-cumem",
            "gpu",
        ),
        ("CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56", "vllm-cumem", "gpu"),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "torch-caching-allocator",
            "gpu",
        ),
        (
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB",
            "torch-caching-allocator",
            "gpu",
        ),
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            "cublas",
            "gpu",
        ),
        ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_ENOUGH_MEMORY", "cudnn", "gpu"),
        ("node:1:1 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'", "nccl", "gpu"),
        ("NCCL WARN Failed to CUDA calloc async 2432 bytes", "nccl", "gpu"),
        ("RuntimeError: HIP error: out of memory", "hip", "gpu"),
        ("RuntimeError: CUDA error: out of memory", "cuda-runtime", "gpu"),
        ("[12.3] Out of memory: Killed process 4242 (python) total-vm:1kB", "kernel-oom-killer", "host"),
        ("slurmstepd: error: Detected 1 oom_kill event in StepId=3274552.batch.", "slurm-oom-kill", "host"),
        (
            "slurmstepd: error: Detected 2 oom-kill event(s) in step 370626.batch cgroup.",
            "slurm-oom-kill",
            "host",
        ),
        (
            "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
            "ray-memory-monitor",
            "host",
        ),
        (
            "RuntimeError: DefaultCPUAllocator: not enough memory: you tried to allocate 1 bytes.",
            "torch-cpu-allocator",
            "host",
        ),
    ],
)
def test_each_form_says_which_memory_ran_out(line, form, memory):
    found = oomforms.find(line)
    assert found is not None and (found.id, found.memory) == (form, memory)


@pytest.mark.parametrize(
    "line",
    [
        "(1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force",
        "INFO gpu_worker.py:81 Sleep mode freed 42.16 GiB memory, 16.79 GiB memory is still in use.",
        "Tasks: ['t6_oom_killer', 't8_memory_leak_loop']",
        "NCCL WARN Cuda failure 'invalid argument'",
        "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:119",
    ],
)
def test_a_line_that_only_mentions_memory_is_no_form(line):
    assert oomforms.find(line) is None


# -- vLLM's CuMemAllocator: vLLM's GPU memory ---------------------------------------------------------

CUMEM = (
    "Runtime Error: Cuda error: out of memory at /workspace/csrc/cumem_allocator.cpp: 62\n"
    "Cuda Error: out of memory at /workspave/scrc/cumem_allocator.cpp: 62\n"
)


def test_vllm_cumem_out_of_memory_is_vllms_share_with_its_levers():
    found = _errors(CUMEM)
    assert [f.rule for f in found] == ["MEM001"]
    f = found[0]
    assert f.evidence["oom_form"] == "vllm-cumem" and f.evidence["vllm_side"] is True
    assert "CuMemAllocator" in f.message
    assert "gpu_memory_utilization" in f.fix and "max_model_len" in f.fix and "wake_up" in f.fix
    assert "gradient_checkpointing" not in f.fix  # not the training step's levers


def test_cumem_at_wake_up_after_sleep_mode_is_the_same_form():
    log = (
        "INFO 02-09 10:00:01 [gpu_worker.py:81] Sleep mode freed 42.16 GiB memory, "
        "16.79 GiB memory is still in use.\n"
        "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56\n"
        "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:57\n"
    )
    found = _errors(log)
    assert [f.rule for f in found] == ["MEM001"] and "free the training side's GPU memory" in found[0].fix


def test_a_cumem_error_other_than_out_of_memory_is_no_oom():
    log = "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:119\n"
    assert not [f for f in _run(log) if f.rule in ("MEM001", "TRI001", "TRI018")]


# -- torch's message split over lines --------------------------------------------------------------


def test_torch_message_head_alone_reads_the_numbers_on_the_lines_after_it():
    log = (
        "torch.OutOfMemoryError: CUDA out of memory.\n\n"
        "Tried to allocate 1.90 GiB. GPU 0 has a total capacity of 15.73 GiB of which 1.28 GiB is free. \n\n"
        "Including non-PyTorch memory, this process has 14.43 GiB memory in use. Of the allocated memory "
        "11.82 GiB is allocated by PyTorch, and 2.41 GiB is reserved by PyTorch but unallocated.\n"
    )
    found = _errors(log)
    assert [f.rule for f in found] == ["TRI001"]
    assert "tried to allocate 1.90 GiB" in found[0].message and found[0].evidence["want_mib"] > 1900


# -- libraries' own allocations -------------------------------------------------------------------

CUBLAS = """Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 125, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`
"""


def test_cublas_alloc_failed_without_vllm_gets_the_training_levers_only():
    found = _errors(CUBLAS)
    assert [f.rule for f in found] == ["TRI001"]
    assert found[0].evidence["oom_form"] == "cublas" and "cuBLAS" in found[0].message
    assert "vLLM" not in found[0].fix and "gradient_checkpointing" in found[0].fix


PINNED = """Traceback (most recent call last):
  File "/usr/lib/python3.10/site-packages/torch/utils/data/_utils/pin_memory.py", line 58, in pin_memory
    return data.pin_memory(device)
RuntimeError: CUDA error: out of memory
"""


DEEPSPEED_PINNED = """Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/deepspeed/runtime/zero/stage_1_and_2.py", line 420, in __init__
    self.single_partition_of_fp32_groups[i] = weights_partition.to(self.device).clone().float().pin_memory()
RuntimeError: CUDA error: out of memory
"""


@pytest.mark.parametrize("log", [PINNED, DEEPSPEED_PINNED])
def test_cuda_out_of_memory_while_pinning_is_pinned_host_memory(log):
    found = _errors(log)
    assert [f.rule for f in found] == ["TRI018"]
    assert "page-locked" in found[0].message and "pin_memory" in found[0].fix


# -- the host's RAM ---------------------------------------------------------------------------------

RAY_DIED = """Traceback (most recent call last):
  File "/home/u/verl/single_controller/ray/base.py", line 51, in __call__
    output = ray.get(output)
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit \
detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root \
causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force \
is called.
"""


def test_slurms_oom_kill_after_a_ray_actor_death_is_the_host_running_out():
    found = _errors(
        RAY_DIED + "slurmstepd: error: Detected 1 oom_kill event in StepId=3274552.batch. Some of the step "
        "tasks have been OOM Killed.\n"
    )
    assert [f.rule for f in found] == ["TRI018"]
    f = found[0]
    assert f.evidence["oom_form"] == "slurm-oom-kill" and "Slurm" in f.message
    assert "offload" in f.fix and "--mem" in f.fix and "dmesg" not in f.fix


def test_rays_hint_of_an_oom_killer_alone_is_no_host_oom():
    assert not [f for f in _run(RAY_DIED) if f.rule == "TRI018" and f.severity == Severity.ERROR]


def test_rays_memory_monitor_message_cut_to_its_tail_is_the_host_running_out():
    log = (
        "9388    122.89  ray::WorkerDict.rm_compute_rm_score\n"
        "Refer to the documentation on how to address the out of memory issue: "
        "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning "
        "more memory on this node or reducing task parallelism by requesting more CPUs per task.\n"
    )
    found = _errors(log)
    assert [f.rule for f in found] == ["TRI018"] and found[0].evidence["oom_form"] == "ray-memory-monitor"


def test_a_memory_monitor_kill_ray_retries_is_no_error():
    log = (
        "Task hungry_hippo failed due to oom. There are infinite oom retries remaining, so the task will be "
        "retried. Error: 2 worker(s) were killed due to the node running low on memory. Memory on the node "
        "was 110.69GB / 124.35GB (0.890161)\n"
    )
    assert not _errors(log)


def test_the_lines_of_a_kill_ray_retries_are_no_error_either():
    log = (
        "(raylet) Task f failed due to oom. There are 3 oom retries remaining, so the task will be retried. "
        "Error: 1 worker(s) were killed\n"
        "Memory on the node (IP: 10.0.0.1) was 120.0GB / 124.35GB (0.96), which exceeds the memory usage "
        "threshold of 0.95.\n"
        "Refer to the documentation on how to address the out of memory issue: "
        "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html.\n"
    )
    assert not _errors(log)


def test_an_oom_kill_the_run_went_on_after_is_no_error():
    log = (
        "[12.3] Out of memory: Killed process 4242 (python) total-vm:1kB\n"
        "{'loss': 0.12, 'grad_norm': 1.0, 'learning_rate': 1e-06, 'epoch': 0.1}\n"
        "{'loss': 0.11, 'grad_norm': 1.0, 'learning_rate': 1e-06, 'epoch': 0.2}\n"
    )
    assert not _errors(log)


def test_a_config_that_pins_memory_printed_before_a_gpu_oom_does_not_make_it_pinned():
    log = (
        "TrainingArguments(dataloader_pin_memory=True, per_device_train_batch_size=8)\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 125, in forward\n'
        "    return F.linear(input, self.weight, self.bias)\n"
        "RuntimeError: CUDA error: out of memory\n"
    )
    found = _errors(log)
    assert [f.rule for f in found] == ["TRI001"]
