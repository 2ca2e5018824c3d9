"""Diagnosis: matches judged against a machine (facts, config, launch line) — why here, and the fix."""

from __future__ import annotations

from envdoctor.findings import Severity
from envdoctor.triage.confirm import confirm
from tests.conftest import A100_40, LEGACY, MODERN, RTX3090, snapshot
from tests.triage.helpers import findings, judge, scan_bytes

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU {gpu} has a "
    "total capacity of 39.39 GiB of which 100.00 MiB is free. Including non-PyTorch memory, this "
    "process has 39.20 GiB memory in use. Of the allocated memory 38.00 GiB is allocated by "
    "PyTorch, and 300.00 MiB is reserved by PyTorch but unallocated."
)


def test_confirmed_by_the_installed_vllm():
    ctx = judge(snapshot(2, A100_40, {**LEGACY, "vllm": "0.7.1"}))
    (f,) = findings("rotary.log", ctx)
    assert f.rule == "PKG002" and "confirmed here: installed vllm 0.7.1 is older than 0.7.2" in f.message
    assert f.fix.startswith("pip install 'vllm") and "this one does not show" not in f.fix


def test_not_confirmed_says_so_and_hedges_the_fix():
    (f,) = findings("device_mismatch.log", judge(snapshot(2, A100_40, LEGACY)))  # vLLM 0.7.3
    assert "not confirmed here: vllm 0.7.3 here is not older than 0.7.2" in f.message
    assert f.fix.endswith("(on the machine that ran it: this one does not show the cause)")
    assert f.evidence["not_confirmed"]
    (f,) = findings("device_mismatch.log", judge(snapshot(2, A100_40, {"trl": "0.15.2"})))
    assert "vllm is not installed here" in f.message


def test_the_layout_confirms_only_when_a_launch_line_is_given():
    spec = {"layout": "dataparallel"}
    bare = judge(snapshot(2, A100_40, LEGACY))
    assert not confirm(spec, bare).held and not confirm(spec, bare).against
    trap = judge(snapshot(2, A100_40, LEGACY), config={"use_vllm": True}, launch="python train.py")
    assert confirm(spec, trap).held == ["one training process sees 2 GPUs (all GPUs)"]
    ok = judge(snapshot(2, A100_40, LEGACY), launch="torchrun --nproc_per_node 2 train.py")
    assert confirm(spec, ok).against and not confirm(spec, ok).confirmed


def test_device_mismatch_from_the_dataparallel_trap_gets_the_launch_fix():
    ctx = judge(snapshot(2, A100_40, LEGACY), config={"use_vllm": True}, launch="python train.py")
    (f,) = findings("device_mismatch.log", ctx)
    assert f.rule == "LAY003"  # vLLM 0.7.3 is recent enough: the trap is the cause
    assert "confirmed here: one training process sees 2 GPUs" in f.message
    assert f.fix.startswith("torchrun --nproc_per_node 1 train.py")


def test_vllm_device_unavailable_computes_num_processes_from_the_layout():
    ctx = judge(
        snapshot(6, A100_40, LEGACY, env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"}),
        config={"use_vllm": True},
        launch="accelerate launch --num_processes 4 train.py",
    )
    (f,) = findings("vllm_device_unavailable.log", ctx)
    assert f.rule == "LAY002" and "4 GPU(s)" in f.message
    assert f.fix == "leave one GPU for vLLM: accelerate launch --num_processes 3 train.py"
    # no launch line: from the GPUs this shell sees
    (f,) = findings(
        "vllm_device_unavailable.log",
        judge(snapshot(8, A100_40, LEGACY, env={"CUDA_VISIBLE_DEVICES": "2,3,4,5,6"})),
    )
    assert "here 5 GPU(s) are visible" in f.message
    assert f.fix.startswith("leave one GPU for vLLM: --num_processes 4")
    assert "cuda:4 = GPU 6" in f.fix


def test_an_explicit_vllm_device_points_to_lay001():
    ctx = judge(
        snapshot(4, A100_40, LEGACY),
        config={"use_vllm": True, "vllm_device": "cuda:4"},
        launch="accelerate launch --num_processes 3 train.py",
    )
    (f,) = findings("vllm_device_unavailable.log", ctx)
    assert f.rule == "LAY001" and "vllm_device: auto" in f.fix


def test_abi_mismatch_confirmed_by_the_requirements():
    pkgs = {**LEGACY, "vllm": {"version": "0.7.3", "requires": ["torch==2.5.1"]}, "torch": "2.6.0+cu124"}
    (f,) = findings("vllm_abi.log", judge(snapshot(1, packages=pkgs)))
    assert "confirmed here: PKG004: vllm 0.7.3 requires torch==2.5.1" in f.message
    assert f.fix.startswith("pip install 'torch==2.5.1'")


def test_allocator_option_confirmed_by_this_shells_variable():
    ctx = judge(snapshot(1, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}))
    (f,) = findings("alloc_conf_old.log", ctx)
    assert "confirmed here: ALC001" in f.message and "expandable_segments:True" in f.fix


def test_batch_divisibility_with_the_config():
    ctx = judge(
        snapshot(3, packages=LEGACY),
        config={"per_device_train_batch_size": 4, "num_generations": 8},
        launch="accelerate launch --num_processes 3 train.py",
    )
    (f,) = findings("batch_global.log", ctx)
    assert f.rule == "CFG002" and "confirmed here: CFG002" in f.message
    assert "num_generations" in f.fix


def test_unused_arguments_name_what_the_installed_trl_removed():
    (f,) = findings("unused_arguments.log", judge(snapshot(2, packages=MODERN)))
    assert "TRL 1.16.0 does not know vllm_device" in f.message
    assert "vllm_device was removed in TRL 0.18.0" in f.message


def test_kv_cache_oom_at_vllm_start_is_mem001():
    ctx = judge(
        snapshot(4, RTX3090, LEGACY),
        config={"use_vllm": True, "vllm_device": "cuda:3"},
        launch="accelerate launch --num_processes 3 train.py",
    )
    (f,) = findings("oom_vllm_kv_cache.log", ctx)
    assert f.rule == "MEM001" and f.evidence["vllm_side"] is True
    assert f.evidence["physical_gpu"] == 3 and "vllm_gpu_memory_utilization" in f.fix


def test_vllm_free_memory_names_the_processes_on_the_gpu_now():
    busy = {0: [{"pid": 77, "name": "python train.py", "used_mib": 65000}]}
    (f,) = findings("vllm_free_memory.log", judge(snapshot(1, processes=busy, used={0: 65000})))
    assert "on that GPU now: pid 77 python train.py (63.48 GiB, running now)" in f.message


def test_one_finding_per_gpu_and_side():
    log = "".join(f"[rank{r}]: {OOM.format(gpu=r % 2)}\n" for r in range(4))
    log += f"(EngineCore_DP0 pid=9) ERROR 01-01 00:00:00 [core.py:1] {OOM.format(gpu=0)}\n"
    found = findings(scan_bytes(log))
    assert [(f.evidence["gpu"], f.evidence["vllm_side"], f.rule) for f in found] == [
        (0, False, "TRI001"),
        (1, False, "TRI001"),
        (0, True, "MEM001"),
    ]
    assert "ranks 0, 2, 2 times" in found[0].message


def test_vllm_frames_in_the_traceback_make_the_oom_vllms():
    log = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line '
        "900, in _generate\n"
        '[rank0]:   File "/venv/lib/python3.11/site-packages/vllm/entrypoints/llm.py", line 470, '
        "in generate\n"
        f"[rank0]: {OOM.format(gpu=0)}\n"
    )
    (f,) = findings(scan_bytes(log))
    assert f.rule == "MEM001" and f.evidence["vllm_side"] is True


def test_a_timeout_without_another_failure_is_the_diagnosis():
    (f,) = findings("nccl_timeout.log")
    assert (f.rule, f.severity) == ("TRI002", Severity.ERROR) and "consequence" not in f.message


def test_the_first_exception_is_named_when_nothing_is_known():
    (f,) = findings("unknown_failure.log")
    assert (f.rule, f.severity) == ("TRI003", Severity.WARNING)
    assert "KeyError: 'prompt'" in f.message and f.evidence["line"] == 5
    assert "ChildFailedError" not in f.message


def test_no_context_no_machine_still_diagnoses():
    result = scan_bytes(f"[rank1]: {OOM.format(gpu=1)}\n")
    (f,) = findings(result)
    assert f.rule == "TRI001" and f.evidence["cause"] == "capacity"
