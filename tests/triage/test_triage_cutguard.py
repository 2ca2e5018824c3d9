"""A log cut inside a traceback at a stack package's own guard names the check (TRI012, a warning)."""

from __future__ import annotations

import pytest

from envdoctor.findings import Severity
from tests.triage.helpers import LOGS, findings, scan_bytes, scan_log

SITE = "/opt/env/lib/python3.11/site-packages"


def _tb(frames: list[tuple[str, int, str, str]], prefix: str = "") -> str:
    out = [f"{prefix}Traceback (most recent call last):"]
    out.append(f'{prefix}  File "/srv/job/train.py", line 12, in <module>')
    out.append(f"{prefix}    trainer.train()")
    for path, line, func, code in frames:
        out.append(f'{prefix}  File "{SITE}/{path}", line {line}, in {func}')
        out.extend(f"{prefix}    {c}" for c in code.split("\n"))
    return "\n".join(out) + "\n"


SWIFT = (
    _tb(
        [
            ("swift/trainers/rlhf_trainer/grpo_trainer.py", 364, "_prefetch", "if self.infer_rank >= 0:"),
            (
                "swift/trainers/rlhf_trainer/grpo_trainer.py",
                253,
                "infer_rank",
                # infer_rank's other check (its "+ … == get_device_count()" check is a catalogue
                # entry, ms-swift-3.2.0.dev-grpo-infer-rank-assert, named before this guard)
                "assert local_world_size % self.args.num_infer_workers == 0",
            ),
        ],
        prefix="[rank7]: ",
    )
    + "[rank7]:   \n"
)

TRL_RAISE = _tb(
    [
        ("trl/trainer/grpo_trainer.py", 320, "__init__", "raise ValueError("),
    ]
) + (
    '        f"The global train batch size ({num_processes} x {args.per_device_train_batch_size}) must be "\n'
    '        f"evenly divisible by the number of generations per prompt ({self.num_generations})."\n'
)

TRL_CONFIG = _tb(
    [
        ("transformers/hf_argparser.py", 400, "parse_args_into_dataclasses", "obj = dtype(**inputs)"),
        ("trl/trainer/grpo_config.py", 800, "__post_init__", "raise ValueError("),
    ]
) + (
    '        f"generation_batch_size ({self.generation_batch_size}) must be divisible by num_generations "\n'
    '        f"({self.num_generations})."\n'
)

VLLM_CONFIG = _tb(
    [
        ("vllm/engine/arg_utils.py", 1100, "create_engine_config", "scheduler_config = SchedulerConfig("),
        (
            "vllm/config.py",
            1876,
            "_verify_args",
            'raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be greater '
            'than or equal to max_num_seqs ({self.max_num_seqs}).")',
        ),
    ],
    prefix="[rank0]: ",
)

TRANSFORMERS_ASSERT = _tb(
    [
        (
            "transformers/training_args.py",
            1650,
            "__post_init__",
            "assert self.per_device_train_batch_size > 0, 'per_device_train_batch_size must be positive'",
        ),
    ]
)


def _one(text: str):
    (f,) = findings(scan_bytes(text))
    return f


def test_a_cut_ms_swift_assert_names_the_check_and_its_option_as_a_warning():
    f = _one(SWIFT)
    assert f.rule == "TRI012" and f.severity == Severity.WARNING
    assert "ms-swift's own check failed" in f.message and "infer_rank" in f.message
    assert "ms-swift's option num_infer_workers" in f.message and "deeper frames may be missing" in f.message
    assert f.fix.startswith("change num_infer_workers") and f.evidence["cut_traceback"] is True
    assert f.evidence["options"] == ["num_infer_workers"]
    assert f.evidence["names"] == ["local_world_size", "num_infer_workers"]


def test_a_cut_trl_raise_names_grpoconfig_keys():
    f = _one(TRL_RAISE)
    assert f.rule == "TRI012" and f.severity == Severity.WARNING
    assert "TRL's own check failed in trainer/grpo_trainer.py:320 in __init__" in f.message
    assert "TRL's GRPOConfig per_device_train_batch_size" in f.message
    assert "TRL's GRPOConfig num_generations" in f.message and "deeper frames may be missing" in f.message
    assert "must be evenly divisible by the number of generations" in f.message


def test_a_cut_trl_raise_with_a_refusing_message_uses_the_refusals_wording():
    f = _one(TRL_CONFIG)
    assert f.rule == "TRI012" and f.severity == Severity.WARNING
    assert "TRL refused the run's configuration with a check of its own" in f.message
    assert "trainer/grpo_config.py:800 in __post_init__" in f.message
    assert "generation_batch_size" in f.message and "deeper frames may be missing" in f.message


def test_a_cut_vllm_config_guard_says_where_the_run_sets_the_field():
    f = _one(VLLM_CONFIG)
    assert f.rule == "TRI012" and f.severity == Severity.WARNING and "vLLM refused" in f.message
    assert "max_num_batched_tokens" in f.message
    assert "LLM(max_num_batched_tokens=…)" in f.fix or "max_num_seqs" in f.fix


def test_a_cut_transformers_assert_with_a_literal_message():
    f = _one(TRANSFORMERS_ASSERT)
    assert f.rule == "TRI012" and f.severity == Severity.WARNING
    assert "transformers" in f.message and "per_device_train_batch_size must be positive" in f.message


def test_a_message_the_log_cuts_off_is_said_as_far_as_shown():
    cut = _tb([("swift/llm/argument/rlhf_args.py", 297, "_check_grpo", "raise ValueError('GRPO with vLLM")])
    f = _one(cut)
    assert f.rule == "TRI012" and f.severity == Severity.WARNING
    assert "ms-swift's own check failed in llm/argument/rlhf_args.py:297 in _check_grpo" in f.message
    assert "“GRPO with vLLM …”" in f.message and "_check_grpo refuses" in f.fix


def test_the_whole_traceback_with_its_exception_line_stays_an_error():
    f = _one(
        VLLM_CONFIG + "[rank0]: ValueError: max_num_batched_tokens (2048) must be greater than or equal to "
        "max_num_seqs (4096).\n"
    )
    assert f.rule == "TRI012" and f.severity == Severity.ERROR and "deeper frames" not in f.message


@pytest.mark.parametrize(
    "frames",
    [
        # a call: the check failed deeper, in frames the log does not show
        [("trl/trainer/grpo_trainer.py", 900, "_generate", "outputs = self.llm.generate(prompts)")],
        # the user's own code
        [("../../../srv/job/reward.py", 5, "reward", "assert use_vllm_server == True")],
        # torch's internals
        [("torch/distributed/distributed_c10d.py", 50, "all_gather", "assert world_size == group_size")],
        # resources: memory, time
        [
            (
                "vllm/worker/worker.py",
                210,
                "determine_num_available_blocks",
                "assert self.init_gpu_memory > free_gpu_memory, ('Error in memory profiling.')",
            )
        ],
        [("vllm/executor/ray_utils.py", 30, "wait", 'raise ValueError(f"timeout after {timeout} seconds")')],
        # the data
        [("vllm/multimodal/processing.py", 1461, "_validate", "assert len(prompts) == len(images)")],
        [("trl/trainer/grpo_trainer.py", 1200, "_prepare", "assert inputs.shape[0] == batch_size")],
        # a re-raise, and a raise cut before its message
        [("transformers/trainer.py", 2000, "train", "raise e")],
        [("vllm/config.py", 900, "_verify", "raise ValueError(")],
        [("vllm/config.py", 900, "_verify", "raise ValueError(msg)")],
        # a whole message that refuses nothing and names no option
        [("trl/models/utils.py", 90, "f", 'raise NotImplementedError("Subclasses implement this.")')],
    ],
)
def test_quiet_on_look_alikes(frames):
    got = findings(scan_bytes(_tb(frames, prefix="[rank0]: ")))
    assert all(f.rule != "TRI012" for f in got), [f.message for f in got]


def test_quiet_on_the_suites_healthy_logs():
    healthy = sorted(p.name for p in LOGS.iterdir() if "healthy" in p.name)
    assert healthy
    for name in healthy:
        assert all(f.rule != "TRI012" for f in findings(scan_log(name))), name


def test_a_worker_prefixed_cut_traceback_with_carets():
    p = "(VllmWorker rank=0 pid=9) ERROR 03-26 11:12:49 [multiproc_executor.py:9] "
    text = _tb(
        [
            ("vllm/v1/worker/gpu_worker.py", 120, "init_device", "self.model_runner = GPUModelRunner("),
            (
                "vllm/v1/worker/gpu_model_runner.py",
                300,
                "__init__",
                "assert not self.speculative_config or self.scheduler_config.chunked_prefill_enabled, "
                '"speculative decoding requires chunked prefill"',
            ),
        ],
        prefix=p,
    )
    text += f"{p}    ^^^^^^^^^^^^^^^^^^^^^^\n"
    f = _one(text)
    assert f.rule == "TRI012" and f.severity == Severity.WARNING and "vLLM" in f.message
    assert "speculative_config" in f.message
    assert "vLLM's scheduler_config.chunked_prefill_enabled" in f.message
