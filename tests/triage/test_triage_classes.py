"""The failure classes of issue 18, each judged with the facts, config and launch line of the run:
the fix must be right for that run (named with its numbers), and quiet where the log is healthy."""

from __future__ import annotations

from envdoctor.findings import Severity
from envdoctor.triage.oom import OomLog, classify, parse_oom
from tests.conftest import A100_40, H100, LEGACY, MODERN, snapshot
from tests.triage.helpers import findings, judge, scan_bytes, scan_log

NOT_UP = "INFO - trl.extras.vllm_client - Server is not up yet. Retrying in 2.0 seconds...\n"


def _one(text: str, ctx=None):
    found = findings(scan_bytes(text), ctx)
    assert len(found) == 1, [(f.rule, f.message) for f in found]
    return found[0]


# -- the vLLM server ------------------------------------------------------------------------------


def test_server_not_up_names_the_free_gpus_port_and_model():
    ctx = judge(
        snapshot(4, H100, MODERN),
        config={
            "use_vllm": True,
            "vllm_mode": "server",
            "vllm_server_port": 8011,
            "model_name_or_path": "Qwen/Qwen2.5-1.5B",
        },
        launch="CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py",
    )
    f = _one(NOT_UP * 3, ctx)
    assert f.rule == "LAY008" and "0.0.0.0:8011" in f.message and "3 retries" in f.message
    assert "CUDA_VISIBLE_DEVICES=2,3 trl vllm-serve --model Qwen/Qwen2.5-1.5B --port 8011" in f.fix
    assert "vllm_mode: colocate" in f.fix


def test_server_that_came_up_is_no_failure():
    log = NOT_UP * 5 + "INFO - trl.extras.vllm_client - Server is up!\n{'loss': 0.01}\n"
    assert findings(scan_bytes(log)) == []


def test_server_not_up_on_trl_0_17_does_not_offer_colocate():
    f = _one(NOT_UP, judge(snapshot(2, H100, {**MODERN, "trl": "0.17.0"})))
    assert "colocate" not in f.fix and "trl vllm-serve" in f.fix


def test_unreachable_and_retries_are_one_finding():
    log = NOT_UP * 2 + (
        "requests.exceptions.ConnectionError: The vLLM server can't be reached at "
        "10.0.0.5:8000 after 240 seconds. Make sure the server is running by "
        "running `trl vllm-serve`.\n"
    )
    f = _one(log)
    assert f.rule == "LAY008" and "10.0.0.5:8000" in f.message and "--port 8000" in f.fix


def test_404_names_the_plain_vllm_serve_of_the_launch():
    log = (
        '  File "/venv/lib/python3.11/site-packages/trl/extras/vllm_client.py", line 233, in '
        'init_communicator\nException: Request failed: 404, {"detail":"Not Found"}\n'
    )
    ctx = judge(
        snapshot(2, H100, MODERN),
        config={"use_vllm": True, "vllm_mode": "server"},
        launch="CUDA_VISIBLE_DEVICES=1 vllm serve Qwen/Qwen2.5-1.5B\nCUDA_VISIBLE_DEVICES=0 python train.py",
    )
    f = _one(log, ctx)
    assert f.rule == "TRI004" and "vllm serve Qwen/Qwen2.5-1.5B" in f.fix
    assert "trl vllm-serve" in f.fix and "(1.16.0)" in f.fix
    assert findings(scan_bytes("Exception: Request failed: 404, {}\n"))[0].rule == "TRI003"


# -- TRL 0.14/0.15 on one GPU (huggingface/trl#2826) ------------------------------------------------


def test_one_gpu_shares_it_instead_of_num_processes_0():
    log = (
        "ValueError: The requested device for vllm (cuda:1) is not available. You are likely "
        "using vLLM without restricting the number of GPUs for training. Set the "
        "`--num_processes` argument to a value lower than the number of GPUs available on "
        "your machine—typically, reducing it by one is sufficient. In your case: "
        "`--num_processes 0`.\n"
    )
    ctx = judge(
        snapshot(1, A100_40, LEGACY),
        config={"use_vllm": True, "vllm_gpu_memory_utilization": 0.9},
        launch="python train.py",
    )
    for judged in (None, ctx):
        f = _one(log, judged)
        assert "vllm_device: cuda:0" in f.fix and "--num_processes 0" not in f.fix
    assert "vllm_gpu_memory_utilization (0.9 in the config)" in _one(log, ctx).fix


# -- compiled extensions ----------------------------------------------------------------------------

ABI = (
    "ImportError: /venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-"
    "gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt"
    "11char_traitsIcESaIcEEE\n"
)


def test_extension_abi_names_the_logs_torch_over_this_machines():
    """A log pasted from another machine shows its torch: the fix names that torch, not the
    triaging machine's (held-out set 21's c004 was told the triager's torch 2.13.0+cpu)."""
    ctx = judge(snapshot(1, H100, {**MODERN, "torch": "2.13.0", "flash-attn": "2.8.3"}))
    f = _one("torch==2.2.1+cu121\nflash-attn==2.5.6\n" + ABI, ctx)
    assert "torch 2.2.1+cu121, flash-attn 2.5.6" in f.message and "2.13.0" not in f.message + f.fix
    assert "torch 2.2.1+cu121" in f.fix


def test_extension_abi_names_both_versions_with_facts():
    ctx = judge(snapshot(1, H100, {**MODERN, "torch": "2.6.0", "flash-attn": "2.7.4.post1"}))
    f = _one(ABI, ctx)
    assert f.rule == "TRI005" and "torch 2.6.0, flash-attn 2.7.4.post1" in f.message
    assert "torch 2.6.0" in f.fix and "cxx11abiFALSE" in f.fix


def _live(snap: dict):
    """The context of a triage judged against this machine's live facts (no --facts)."""
    from dataclasses import replace

    ctx = judge(snap)
    return replace(ctx, facts=replace(ctx.facts, source="live"))


def test_extension_abi_judged_live_without_the_logs_torch_names_the_runs_own():
    """Set 23's c002 / d002: the log shows no torch, and the judging machine's live torch is not the
    run's: the fix says to match the run's own torch / CUDA / C++ ABI and how to read them."""
    ctx = _live(snapshot(1, H100, {**MODERN, "torch": "2.13.0+cpu", "flash-attn": "2.8.3"}))
    f = _one(ABI, ctx)
    assert f.rule == "TRI005" and "2.13.0" not in f.message + f.fix
    assert "the run's own torch" in f.fix and "torch.version.cuda" in f.fix and "FORCE_BUILD" in f.fix
    f = _one("torch==2.2.1+cu121\n" + ABI, ctx)  # the log's torch: named as before
    assert "torch 2.2.1+cu121" in f.fix and "the run's own torch" not in f.fix


def test_vllm_abi_takes_pkg004s_exact_fix_when_the_facts_show_it():
    log = (
        "ImportError: /venv/lib/python3.11/site-packages/vllm/_C.abi3.so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi\n"
    )
    pkgs = {**MODERN, "vllm": {"version": "0.8.5", "requires": ["torch==2.6.0"]}, "torch": "2.7.0+cu126"}
    f = _one(log, judge(snapshot(1, H100, pkgs)))
    assert f.rule == "PKG004" and "torch" in f.fix
    assert _one(log).rule == "TRI005"


def test_a_symbol_that_is_not_torchs_is_not_blamed_on_torch():
    f = _one("ImportError: /x/vllm/_C.abi3.so: undefined symbol: _Z24silu_and_mul_quantv\n")
    assert f.rule == "TRI003"


# -- API drift --------------------------------------------------------------------------------------

DRIFT = (
    'Traceback (most recent call last):\n  File "/venv/lib/python3.12/site-packages/trl/trainer/'
    'grpo_trainer.py", line 95, in <module>\n    from vllm.sampling_params import '
    "GuidedDecodingParams\nImportError: cannot import name 'GuidedDecodingParams' from "
    "'vllm.sampling_params'\n"
)


def test_api_drift_pins_the_vllm_the_installed_trl_supports():
    f = _one(DRIFT, judge(snapshot(1, H100, {**MODERN, "trl": "0.25.0", "vllm": "0.12.0"})))
    assert f.rule == "TRI009" and "pip install 'vllm==0.10.2'" in f.fix


def test_api_drift_reads_trls_own_warning_without_facts():
    warn = (
        "/venv/lib/python3.12/site-packages/trl/import_utils.py:91: UserWarning: TRL currently "
        "only supports vLLM version `0.10.2`. You have version 0.12.0 installed. We recommend "
        "to install this version to avoid compatibility issues.\n"
    )
    f = _one(warn + DRIFT)
    assert "vllm==0.10.2" in f.fix and "0.12.0 is installed" in f.fix


def test_an_import_error_from_an_unrelated_package_is_not_api_drift():
    f = _one("ImportError: cannot import name 'foo' from 'mypkg.utils'\n")
    assert f.rule == "TRI003"


# -- reward functions --------------------------------------------------------------------------------


def test_reward_function_without_kwargs():
    log = (
        '  File "/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1200, in '
        "_calculate_rewards\n    output_reward_func = reward_func(\nTypeError: "
        "correctness() got an unexpected keyword argument 'answer'\n"
    )
    f = _one(log)  # the data rule's own id: TRL's reward call is the frame that raised
    assert f.rule == "DAT008" and f.severity == Severity.ERROR
    assert "GRPOTrainer" in f.message and "'answer'" in f.message
    assert f.fix == "add **kwargs to correctness's parameters: def correctness(..., **kwargs)"
    # the user's own call of a function named for rewards, no frame of TRL's: likely, not proved
    own = log.replace("/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", "/home/u/train.py")
    own = own.replace("_calculate_rewards", "score").replace("output_reward_func = reward_func(", "s = f(x)")
    own = own.replace("correctness()", "correctness_reward()")
    f = _one(own)
    assert f.rule == "DAT008" and f.severity == Severity.WARNING


def test_reward_function_missing_a_column_names_the_data_rule_at_trls_reward_call():
    log = (
        '  File "/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 799, in '
        "_generate_and_score_completions\n    output_reward_func = reward_func(prompts=prompts, "
        "completions=completions, **reward_kwargs)\nTypeError: accuracy_reward() missing 1 required "
        "positional argument: 'solution'\n"
    )
    f = _one(log)
    assert f.rule == "DAT007" and f.severity == Severity.ERROR
    assert "rename_column('<the column that holds it>', 'solution')" in f.fix
    from envdoctor.checks.data import reward_argument_fix

    assert f.fix.startswith(reward_argument_fix("solution"))  # the check's and the probe's fix
    # a function of the user's own, not a reward, missing an argument: not the data rule
    other = (
        '  File "/home/u/train.py", line 40, in main\n    p = build_prompt(row)\n'
        "TypeError: build_prompt() missing 1 required positional argument: 'solution'\n"
    )
    assert all(x.rule != "DAT007" for x in findings(scan_bytes(other)))


def test_an_unexpected_keyword_elsewhere_is_not_called_a_reward_problem():
    f = _one("TypeError: Linear.forward() got an unexpected keyword argument 'scale'\n")
    assert f.rule == "TRI003"


# -- ranks on one GPU, DataParallel ------------------------------------------------------------------


def test_duplicate_gpu_between_trainer_and_server():
    log = (
        '  File "/venv/lib/python3.12/site-packages/trl/extras/vllm_client.py", line 250, in '
        "init_communicator\n    self.pynccl_comm = PyNcclCommunicator(pg, device=0)\n"
        "NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000\n"
    )
    f = _one(log)
    assert f.rule == "TRI006" and "`trl vllm-serve` server are on one GPU" in f.message
    assert "trl vllm-serve" in f.fix and "vllm_mode: colocate" in f.fix
    assert not f.fix.startswith("give every rank its own GPU")  # the launcher's fix cannot work


def test_duplicate_gpu_with_a_one_gpu_server_on_a_one_gpu_machine_is_colocate():
    """huggingface/trl#3158 / #3487: one GPU; the maintainers' answer is colocate mode."""
    log = (
        "INFO:trl.extras.vllm_client:Server is up!\n"
        "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 40\n"
        "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)\n"
    )
    f = _one(log, judge(snapshot(1, H100, MODERN)))
    assert f.rule == "TRI006" and f.fix.startswith("set vllm_mode: colocate")
    assert "set_device(LOCAL_RANK) does not help" in f.fix and "trl#3487" in f.fix


def test_duplicate_gpu_among_the_servers_own_engines():
    log = (
        "(EngineCore_1 pid=1422737) ERROR 05-14 21:20:46 [core.py:396] EngineCore failed to start.\n"
        "host:1422737:1422737 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 "
        "both on CUDA device 4b000\n"
    )
    f = _one(log)
    assert f.rule == "TRI006" and "data-parallel engines" in f.message
    assert "data_parallel_size" in f.fix


def test_duplicate_gpu_with_more_processes_than_gpus():
    log = (
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1727, invalid "
        "usage (run with NCCL_DEBUG=WARN for details)\nLast error:\nDuplicate GPU detected : "
        "rank 2 and rank 0 both on CUDA device 1000\n"
    )
    ctx = judge(snapshot(2, H100, MODERN), launch="torchrun --nproc_per_node 4 train.py")
    f = _one(log, ctx)
    assert f.rule == "TRI006" and "4 processes on 2 visible GPU(s)" in f.fix


# -- out of memory ---------------------------------------------------------------------------------


def _oom(
    total: float,
    free: float,
    want: float,
    alloc: float,
    unalloc: float,
    self_gib: float | None = None,
    others: dict[int, float] | None = None,
) -> str:
    text = (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {want:.2f} GiB. GPU 0 "
        f"has a total capacity of {total:.2f} GiB of which {free:.2f} GiB is free. "
    )
    for pid, gib in (others or {}).items():
        text += f"Process {pid} has {gib:.2f} GiB memory in use. "
    if self_gib is not None:
        text += f"Including non-PyTorch memory, this process has {self_gib:.2f} GiB memory in use. "
    return text + (
        f"Of the allocated memory {alloc:.2f} GiB is allocated by PyTorch, and "
        f"{unalloc:.2f} GiB is reserved by PyTorch but unallocated."
    )


def test_colocated_vllm_share_is_named_not_fragmentation():
    # 25 GiB held outside PyTorch (vLLM's share), 1.5 GiB reserved-unallocated > the 1.2 requested
    oom = parse_oom(_oom(79.10, 0.30, 1.20, 52.0, 1.50, self_gib=78.5))
    ctx = judge(
        snapshot(1, H100, MODERN),
        config={"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.35},
        launch="accelerate launch --num_processes 1 train.py",
    )
    cause = classify(oom, ctx)
    assert cause.cause == "vllm-share" and "25.00 GiB" in cause.message
    assert "from 0.35 to 0.32" in cause.fix and "vllm_enable_sleep_mode" in cause.fix
    assert "vllm_mode: server" in cause.fix and "expandable_segments" not in cause.fix
    from_log = classify(oom, None, log=OomLog(colocated=True))
    assert from_log.cause == "vllm-share"


def test_fragmentation_only_when_it_is_what_is_missing():
    frag = parse_oom(_oom(79.10, 1.06, 2.00, 74.10, 2.31, self_gib=78.02))
    assert classify(frag, None, log=OomLog(colocated=True)).cause == "fragmentation"
    not_frag = parse_oom(_oom(79.10, 0.10, 1.00, 40.0, 1.20, self_gib=70.0))
    assert classify(not_frag, None).cause != "fragmentation"


def test_ranks_of_this_job_on_gpu_0_are_not_another_tenant():
    text = _oom(79.10, 0.05, 2.0, 18.0, 0.5, self_gib=19.0, others={101: 19.0, 102: 19.0, 103: 19.0})
    log = "".join(f"[rank{r}]: {text}\n" for r in range(4))
    f = findings(scan_bytes(log))[0]
    assert f.rule == "TRI006" and "ranks 0, 1, 2, 3" in f.message
    assert "LOCAL_RANK" in f.fix and "stop them" not in f.fix
    one = findings(scan_bytes(f"[rank0]: {text}\n"))[0]  # one rank: the others are strangers
    assert one.rule == "MEM002" and "CUDA_VISIBLE_DEVICES" in one.fix


def test_a_vgpu_or_per_process_cap_is_the_budget():
    hami = (
        "[HAMI-core ERROR (pid:30 thread=1 allocator.c:53)]: Device 0 OOM 21474836480 / "
        "21474836480\n" + _oom(20.0, 0.1, 1.0, 18.0, 0.2, self_gib=19.8) + "\n"
    )
    f = findings(scan_bytes(hami))[0]
    assert f.evidence["cause"] == "vgpu-cap" and "20.00 GiB" in f.message
    allowed = parse_oom(
        _oom(79.10, 30.0, 2.0, 37.0, 0.5, self_gib=38.0).replace(
            "Of the allocated", "38.00 GiB allowed; Of the allocated"
        )
    )
    assert classify(allowed).cause == "allowed-cap"


def test_old_vllm_named_by_its_banner():
    log = (
        "INFO 02-13 10:02:11 llm_engine.py:232] Initializing an LLM engine (v0.6.5) with config:"
        " model='Qwen/Qwen2.5-0.5B'\n[rank0]: RuntimeError: Expected all tensors to be on the "
        "same device, but found at least two devices, cuda:1 and cuda:0!\n"
    )
    f = _one(log)
    assert f.rule == "PKG002" and "vLLM 0.6.5" in f.message and "vllm>=0.7.2" in f.fix
    newer = log.replace("(v0.6.5)", "(v0.8.5)")
    assert _one(newer).rule == "TRI003"


def test_a_full_gpu_is_capacity_even_when_fragmentation_failed_the_last_request():
    """Measured on an H100 (docs/validation/memory-gpu-h100.md, s10): the memory plan sized the
    step at 82 GiB; it died with 76.40 of 79.18 GiB live and 1.98 GiB reserved but unallocated."""
    real = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 54.00 MiB. GPU 0 has a "
        "total capacity of 79.18 GiB of which 52.19 MiB is free. Including non-PyTorch memory, "
        "this process has 79.12 GiB memory in use. Of the allocated memory 76.40 GiB is "
        "allocated by PyTorch, and 1.98 GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
    )
    cause = classify(parse_oom(real), None)
    assert cause.cause == "capacity" and "96%" in cause.message
    assert "max_completion_length" in cause.fix and "gains at most 1.98 GiB" in cause.fix


def test_a_crowd_of_equal_small_holders_is_this_jobs_ranks_and_strangers_are_not():
    same = {101549 + i: 1.19 for i in range(15)}
    text = _oom(31.74, 0.04, 0.05, 11.54, 0.66, self_gib=13.82, others=same)
    cause = classify(parse_oom(text))
    assert cause.rule == "TRI006" and "15 other processes" in cause.message
    assert "set_device" in cause.fix
    strangers = {4242: 1.19, 918273: 1.19}  # far-apart pids: not one launcher's children
    assert (
        classify(parse_oom(_oom(31.74, 0.04, 0.05, 28.0, 0.1, self_gib=29.0, others=strangers))).rule
        != "TRI006"
    )
    big = {5001: 12.0, 5002: 12.0}  # models, not contexts: someone else's work
    assert classify(parse_oom(_oom(31.74, 0.04, 0.05, 6.0, 0.1, self_gib=7.0, others=big))).rule != "TRI006"


def test_trl_reaching_into_a_vllm_that_moved_on_gets_the_pairing():
    """TRL 0.15.2 loads weights through llm_engine.model_executor; vLLM 0.8's V1 engine has none
    (huggingface/trl#3115: vllm 0.8.0 + trl 0.15.2; TRL 0.15.2's setup.py pins vllm==0.7.2)."""
    ctx = judge(snapshot(1, H100, {**MODERN, "trl": "0.15.2", "vllm": "0.8.0"}))
    (f,) = findings(scan_log("api_drift_attribute.log"), ctx)
    assert f.rule == "TRI009" and "model_executor" in f.message and "0.8.0" in f.message
    assert "trl[vllm]==0.15.2" in f.fix and "==0.7.2 (0.15.2" in f.fix and "VLLM_USE_V1=0" in f.fix


def test_an_attribute_error_in_the_users_code_is_not_called_drift():
    text = (
        'Traceback (most recent call last):\n  File "/home/me/train.py", line 270, in gen\n'
        "    m = self.llm.llm_engine.model_executor\n"
        "AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n"
    )
    (f,) = findings(scan_bytes(text))
    assert f.rule == "TRI003"


# -- the CUDA toolkit that compiles an extension (TRI023) -----------------------------------------

_DS_CPU_ADAM = """Traceback (most recent call last):
  File "train.py", line 40, in <module>
    trainer.train()
  File "/usr/local/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 94, in __init__
    self.ds_opt_adam = CPUAdamBuilder().load()
  File "/usr/local/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 480, in load
    return self.jit_load(verbose)
  File "/usr/local/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 512, in jit_load
    self.build_for_cpu = not assert_no_cuda_mismatch(self.name)
deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: \
Installed CUDA version 12.4 does not match the version torch was compiled with 11.8, \
unable to compile cuda/cpp extensions without a matching cuda version.
"""


def test_deepspeed_refusing_the_toolkit_names_both_cuda_releases_and_the_way_out():
    f = _one(_DS_CPU_ADAM)
    assert f.rule == "TRI023" and f.severity.value == "error"
    assert "CUDA 12.4" in f.message and "CUDA 11.8" in f.message and "DeepSpeed" in f.message
    assert "CUDA_HOME=/usr/local/cuda-11.8" in f.fix and "whl/cu124" in f.fix


def test_a_bare_exception_line_is_the_failure_not_the_destructor_noise_after_it():
    log = (
        '  File "/opt/ds/deepspeed/ops/op_builder/builder.py", line 60, in assert_no_cuda_mismatch\n'
        '    f"Installed CUDA version {sys_cuda_version} does not match the "\n'
        "Exception: Installed CUDA version 11.0 does not match the version torch was compiled with "
        "10.1, unable to compile cuda/cpp extensions without a matching cuda version.\n"
        "Exception ignored in: <function DeepSpeedCPUAdam.__del__ at 0x7f30c6ca0830>\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/ds/deepspeed/ops/adam/cpu_adam.py", line 91, in __del__\n'
        "    self.ds_opt_adam.destroy_adam(self.opt_id)\n"
        "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'\n"
    )
    rules = [f.rule for f in findings(scan_bytes(log))]
    assert rules == ["TRI023"], rules


def test_torch_cpp_extension_mismatch_is_named_too():
    log = (
        "RuntimeError: \nThe detected CUDA version (12.1) mismatches the version that was used to "
        "compilePyTorch (11.7). Please make sure to use the same CUDA versions.\n"
    )
    f = _one(log)
    assert f.rule == "TRI023" and "torch's cpp_extension" in f.message
    assert "CUDA 12.1" in f.message and "cuda-11.7" in f.fix


def test_compatible_minor_releases_that_deepspeed_accepts_are_no_failure():
    log = (
        "Installed CUDA version 12.2 does not match the version torch was compiled with 12.1 but "
        "since the APIs are compatible, accepting this combination\n"
        "{'loss': 0.1, 'learning_rate': 1e-06, 'epoch': 0.01}\n"
    )
    assert findings(scan_bytes(log)) == []


def test_the_torch_mismatch_quoted_and_wrapped_over_lines_is_read_whole():
    # Dao-AILab/flash-attention#1759: a build log quoted with "> " and wrapped by setuptools
    log = (
        "> RuntimeError:\n"
        "> The detected CUDA version (12.9) mismatches the version that was used to compile\n"
        "> PyTorch (11.8). Please make sure to use the same CUDA versions.\n"
    )
    f = _one(log)
    assert f.rule == "TRI023" and "CUDA 12.9" in f.message and "cuda-11.8" in f.fix


def test_an_oom_beside_vllms_engine_start_failing_is_vllms():
    """vLLM's engine start failed and the out-of-memory pasted under it is the engine's: its
    share of the GPU is the lever, not training's (held-out set 21, a001: SkyRL's colocated
    vLLM at gpu_memory_utilization 0.8); a training OOM without it stays training's."""
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 594.00 MiB.\n"
        "GPU 0 has a total capacity of 22.03 GiB of which 582.00 MiB is free.\n"
    )
    start = (
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n\n"
    )
    (f,) = [x for x in findings(scan_bytes(start + oom)) if x.rule in ("MEM001", "TRI001")]
    assert f.rule == "MEM001" and "gpu_memory_utilization" in f.fix
    training = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 900, in training_step\n'
        "    loss.backward()\n"
    )
    (g,) = [x for x in findings(scan_bytes(training + oom)) if x.rule in ("MEM001", "TRI001")]
    assert g.rule == "TRI001"
