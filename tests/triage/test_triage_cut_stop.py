"""A log cut inside a traceback: where it stopped (the deepest frame, the last call across
packages), the known failures raised from exactly there (a warning at most), and a package's raise
whose literal message the paste shows read as the exception line (``cutknown``)."""

from __future__ import annotations

from pathlib import Path

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes

SITE = "/opt/env/lib/python3.11/site-packages"
VALIDATION = Path(__file__).resolve().parents[2] / "docs" / "validation"


def _tb(frames: list[tuple[str, int, str, str]], head: str = "") -> str:
    out = [head, "Traceback (most recent call last):"] if head else ["Traceback (most recent call last):"]
    out.append('  File "/srv/job/train.py", line 12, in <module>')
    out.append("    main()")
    for path, line, func, code in frames:
        out.append(f'  File "{SITE}/{path}", line {line}, in {func}')
        out.extend(f"    {c}" for c in code.split("\n"))
    return "\n".join(out) + "\n"


CONFIG_KEYERROR = _tb(
    [
        (
            "transformers/models/auto/configuration_auto.py",
            1000,
            "from_pretrained",
            "config_class = CONFIG_MAPPING[config_dict['model_type']]",
        ),
        ("transformers/models/auto/configuration_auto.py", 710, "__getitem__", "raise KeyError(key)"),
    ],
    head="transformers 4.33.0",
)

#: the same frames, the deepest one a call (not the raise): the frames do not discriminate
CONFIG_CALL = _tb(
    [
        (
            "transformers/models/auto/configuration_auto.py",
            1000,
            "from_pretrained",
            "config_class = CONFIG_MAPPING[config_dict['model_type']]",
        ),
        ("transformers/models/auto/configuration_auto.py", 705, "__getitem__", "value = self._mapping[key]"),
    ]
)

ACCELERATE_NEEDED = _tb(
    [
        ("transformers/trainer.py", 300, "__init__", "args = TrainingArguments(output_dir=tmp_dir)"),
        ("transformers/training_args.py", 1787, "_setup_devices", "raise ImportError("),
    ]
) + (
    '        "Using the `Trainer` with `PyTorch` requires `accelerate>=0.20.1`: Please run '
    '`pip install transformers[torch]` or `pip install accelerate -U`"\n'
)

BOUNDARY = _tb(
    [
        ("trl/trainer/grpo_trainer.py", 657, "__init__", "self.llm = LLM("),
        ("vllm/utils.py", 1096, "inner", "return fn(*args, **kwargs)"),
        ("vllm/entrypoints/llm.py", 243, "__init__", "self.llm_engine = LLMEngine.from_engine_args("),
        (
            "vllm/engine/llm_engine.py",
            429,
            "_initialize_kv_caches",
            "self.model_executor.initialize_cache(num_gpu_blocks)",
        ),
    ],
    head="trl==0.16.0\nvllm==0.8.3",
)


def _one(text: str):
    (f,) = findings(scan_bytes(text))
    return f


def test_a_cut_traceback_names_the_deepest_frame_and_the_last_call_across_packages_with_versions():
    f = _one(BOUNDARY)
    assert f.rule == "TRI003" and f.severity == Severity.WARNING and f.evidence["cut_traceback"] is True
    assert "it stopped in vllm 0.8.3 _initialize_kv_caches (engine/llm_engine.py:429)" in f.message
    # vLLM's ``inner`` only hands the call on: the boundary is TRL's __init__ calling LLM()
    assert (
        "trl 0.16.0 __init__ (trainer/grpo_trainer.py:657) → vllm 0.8.3 __init__ (entrypoints/llm.py:243)"
        in f.message
    )
    assert "no cause can be named without the exception" in f.message and "candidates" not in f.evidence
    assert "paste the traceback to its end" in f.fix


def test_the_deepest_frame_raising_a_known_failures_exception_at_its_own_frame_is_offered_as_a_warning():
    f = _one(CONFIG_KEYERROR)
    assert f.rule == "TRI003" and f.severity == Severity.WARNING
    assert f.evidence["candidates"] == ["transformers-model-type-keyerror"]
    assert "which the exception line would confirm" in f.message and "`raise KeyError(key)`" in f.message
    assert f.fix.startswith("if it is transformers-model-type-keyerror: pip install a transformers release")
    assert "paste the traceback to its end" in f.fix


def test_quiet_where_the_frames_do_not_discriminate():
    """The entry's file, but the deepest statement is a lookup, not its raise: no candidate."""
    f = _one(CONFIG_CALL)
    assert f.rule == "TRI003" and "candidates" not in f.evidence
    assert "no cause can be named without the exception" in f.message


def test_a_raise_whose_literal_message_the_paste_shows_is_read_as_the_exception_line():
    f = _one(ACCELERATE_NEEDED)
    assert f.rule == "TRI013" and f.severity == Severity.WARNING and f.evidence["cut_traceback"] is True
    assert "accelerate" in f.message and "the log ends inside the traceback, at this raise" in f.message


def test_a_raise_without_a_literal_message_stays_the_cut_answer():
    text = _tb([("transformers/training_args.py", 1787, "_setup_devices", "raise ImportError(msg)")])
    f = _one(text)
    assert f.rule == "TRI003" and "no cause can be named" in f.message


def test_real_logs_set20_keyerror_and_ipython_raise():
    """heldout-2026-11-30c/logs20c/011 (settled: the transformers release lacked the model type);
    heldout-2026-11-29/logs3/010 (settled: accelerate installed after transformers, in Colab; an
    IPython traceback whose numbered source lines show the raise's message)."""
    log = VALIDATION / "heldout-2026-11-30c" / "logs20c" / "logs" / "011.log"
    (f,) = findings(scan_bytes(log.read_bytes()))
    assert f.rule == "TRI003" and f.evidence.get("candidates") == ["transformers-model-type-keyerror"]
    log = VALIDATION / "heldout-2026-11-29" / "logs3" / "010.log"
    (f,) = findings(scan_bytes(log.read_bytes()))
    assert f.rule == "TRI013" and f.severity == Severity.WARNING and "accelerate" in f.message


def test_real_log_set24_names_where_it_stopped():
    """heldout-2026-11-30g/logs24a/004: accelerate's optimizer.step into torch's scheduler wrapper."""
    log = VALIDATION / "heldout-2026-11-30g" / "logs24a" / "logs" / "004.log"
    (f,) = findings(scan_bytes(log.read_bytes()))
    assert f.rule == "TRI003" and f.severity == Severity.WARNING
    assert "it stopped in torch wrapper (optim/lr_scheduler.py:133)" in f.message
    assert "accelerate" in f.message and "step (optimizer.py:179)" in f.message
