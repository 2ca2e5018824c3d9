# ruff: noqa: E501 - log lines are quoted as programs print them
"""A package refusing a setting with its bound (TRI039, bounds.py), pydantic's validation blocks as
a failure shape (pydantic_blocks.py), and a frameless refusal the raise-site index places at a
package's raise (TRI012, refusal._as_framed). The texts are synthetic, written in the grammar the
packages print."""

from __future__ import annotations

import time

from envdoctor.findings import Severity
from envdoctor.triage.pydantic_blocks import blocks
from tests.triage.helpers import findings, scan_bytes


def _all(text: str):
    return findings(scan_bytes(text))


def _rules(text: str) -> list[tuple[str, str]]:
    return [(f.rule, f.severity.value) for f in _all(text)]


def _one(text: str):
    found = _all(text)
    assert len(found) == 1, found
    return found[0]


# -- pydantic's blocks ------------------------------------------------------------------------------

DS_BLOCK = """\
[rank3]: Traceback (most recent call last):
[rank3]:   File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/config.py", line 70, in get_zero_config
[rank3]:     return DeepSpeedZeroConfig(**zero_config_dict)
[rank3]: pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedZeroConfig
[rank3]: stage3_prefetch_bucket_size
[rank3]:   Input should be a valid integer, got a number with a fractional part [type=int_from_float, input_value=15099494.4, input_type=float]
[rank3]:     For further information visit https://errors.pydantic.dev/2.9/v/int_from_float
"""


def test_a_block_is_read_with_its_header_field_constraint_and_rank_prefix():
    from envdoctor.triage.scanner import split_prefix

    lines = [split_prefix(x)[0] for x in DS_BLOCK.splitlines()]
    (b,) = blocks(lines)
    assert (b.model, b.count, b.start, b.end) == ("DeepSpeedZeroConfig", 1, 4, 7)
    (e,) = b.errors
    assert (e.loc, e.type, e.value, e.input_type) == (
        "stage3_prefetch_bucket_size",
        "int_from_float",
        "15099494.4",
        "float",
    )


def test_several_errors_of_one_block_and_vllm_value_error_form():
    text = (
        "pydantic_core._pydantic_core.ValidationError: 2 validation errors for SFTTrainerConfig\n"
        "data.fake\n"
        "  Input should be a valid boolean [type=bool_type, input_value={'a': 1}, input_type=dict]\n"
        "    For further information visit https://errors.pydantic.dev/2.11/v/bool_type\n"
        "async_level\n"
        "  Extra inputs are not permitted [type=extra_forbidden, input_value=5, input_type=int]\n"
        "ValidationError: 1 validation error for SchedulerConfig\n"
        "  Value error, max_num_batched_tokens (8192) is smaller than max_model_len (131072). [type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]\n"
    )
    first, second = blocks(text.splitlines())
    assert [(e.loc, e.field, e.type) for e in first.errors] == [
        ("data.fake", "fake", "bool_type"),
        ("async_level", "async_level", "extra_forbidden"),
    ]
    assert second.model == "SchedulerConfig" and second.errors[0].loc == ""
    assert second.errors[0].msg.startswith("max_num_batched_tokens (8192) is smaller")


def test_blocks_are_bounded_on_hostile_input():
    line = "x" * 100_000 + " [type=" + "a" * 100_000 + "\n"
    text = (
        "field\n  Input should be 1 [type=greater_than, input_value=0, input_type=int]\n" * 5000
    ) + line * 200
    t = time.perf_counter()
    found = blocks(text.splitlines())
    assert time.perf_counter() - t < 5
    assert sum(len(b.errors) for b in found) <= 32


def test_deepspeed_block_names_the_json_key_an_integer_and_the_auto_releases():
    f = _one(DS_BLOCK)
    assert (f.rule, f.severity) == ("TRI039", Severity.ERROR)
    assert "stage3_prefetch_bucket_size = 15099494.4" in f.message and "DeepSpeedZeroConfig" in f.message
    assert f.fix.startswith("set stage3_prefetch_bucket_size to an integer (e.g. 15099494)")
    assert '"zero_optimization": {"stage3_prefetch_bucket_size": 15099494}' in f.fix
    assert "transformers>=4.45.0" in f.fix and "accelerate>=0.31.0" in f.fix and "below 0.15.0" in f.fix


def test_a_headless_block_of_a_vllm_engine_argument_with_its_bound():
    f = _one(
        "[rank0]: max_num_seqs\n"
        "[rank0]:   Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]\n"
        "[rank0]:     For further information visit https://errors.pydantic.dev/2.12/v/greater_than_equal\n"
    )
    assert (f.rule, f.severity) == ("TRI039", Severity.ERROR)
    assert f.fix.startswith("set max_num_seqs to 1 or more") and "vllm serve --max-num-seqs" in f.fix


def test_a_headless_vllm_value_error_reads_the_bound_in_its_words():
    f = _one(
        "[rank0]:   Value error, max_num_batched_tokens (8192) is smaller than max_model_len (131072). "
        "This effectively limits the maximum sequence length. [type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]\n"
    )
    assert (f.rule, f.severity) == ("TRI039", Severity.ERROR)
    assert f.fix.startswith("set max_num_batched_tokens to 131072 or more")
    assert "vllm serve --max-num-batched-tokens 131072" in f.fix


def test_a_block_in_a_warning_or_of_another_model_or_field_is_quiet():
    warned = (
        "WARNING 01-01 10:00:00 [serving.py:12] request refused: max_num_seqs\n"
        "WARNING 01-01 10:00:00 [serving.py:12]   Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]\n"
        "{'loss': 0.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
    )
    assert not any(r == "TRI039" for r, _ in _rules(warned))
    went_on = (
        "max_num_seqs\n"
        "  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]\n"
        "{'loss': 0.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
        "{'loss': 0.4, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.2}\n"
    )
    assert not any(r == "TRI039" for r, _ in _rules(went_on))
    app = (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for AppSettings\n"
        "max_num_seqs\n"
        "  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]\n"
    )
    assert not any(r == "TRI039" for r, _ in _rules(app))
    unknown = (
        "some_private_knob\n"
        "  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]\n"
    )
    assert not any(r == "TRI039" for r, _ in _rules(unknown))


# -- a bound stated between named settings ---------------------------------------------------------


def test_a_value_over_an_engine_argument_names_the_argument_and_the_value():
    f = _one(
        '(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core_client.py", line 1053, in _call_utility_async\n'
        "(APIServer pid=1)     return await future\n"
        "(APIServer pid=1) Exception: Call to add_lora method failed: LoRA rank 64 is greater than max_lora_rank 16.\n"
    )
    assert (f.rule, f.severity) == ("TRI039", Severity.ERROR)
    assert f.fix.startswith("set max_lora_rank to 64 or more")
    assert "LLM(max_lora_rank=64)" in f.fix and "vllm serve --max-lora-rank 64" in f.fix


def test_the_sentence_forms_of_a_bound():
    from envdoctor.triage.bounds import stated_bounds

    kinds = [
        (b.kind, b.a, b.va, b.b, b.vb)
        for t in (
            "max_num_batched_tokens (8192) must be >= max_model_len (131072)",
            "max_model_len 40000 exceeds max_position_embeddings 32768",
            "generation_batch_size must be divisible by num_generations",
            "gpu_memory_utilization must be at least 0.1",
        )
        for b in stated_bounds(t)
    ]
    assert kinds == [
        ("ge", "max_num_batched_tokens", "8192", "max_model_len", "131072"),
        ("le", "max_model_len", "40000", "max_position_embeddings", "32768"),
        ("div", "generation_batch_size", "", "num_generations", ""),
        ("ge", "gpu_memory_utilization", "", "", "0.1"),
    ]


def test_a_greater_than_sentence_with_unknown_names_is_not_this_failure():
    rules = _rules("Exception: Call failed: widget count 64 is greater than gadget_limit 16.\n")
    assert not any(r == "TRI039" for r, _ in rules)


def test_a_bound_in_a_warning_is_quiet():
    rules = _rules(
        "WARNING 01-01 10:00:00 [lora.py:5] Exception: LoRA rank 64 is greater than max_lora_rank 16, skipped\n"
        "{'loss': 0.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
    )
    assert not any(r == "TRI039" for r, _ in rules)


# -- a frameless refusal the raise-site index places ------------------------------------------------


def test_a_frameless_refusal_placed_at_a_packages_raise_is_that_frames_refusal():
    f = _one(
        "ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a `device_map`.\n"
    )
    assert (f.rule, f.severity) == ("TRI012", Severity.ERROR)
    assert "from_pretrained" in f.message and "low_cpu_mem_usage=True" in f.message


def test_a_frameless_assert_or_a_formatted_value_placed_at_a_package_is_not_read_as_a_guard():
    from envdoctor.triage.refusal import _as_framed
    from envdoctor.triage.traceback_model import Traceback

    class _Site:
        exc = "AssertionError"
        names: tuple[str, ...] = ()

    class _Loc:
        complete = True
        package = "verl"
        sites = (_Site(),)

    tb = Traceback(exc_type="AssertionError", message="x must have identical batch_size", line_no=1)
    assert not _as_framed(_Loc(), tb, tb.message)
    tb = Traceback(exc_type="ValueError", message="x must have identical batch_size", line_no=1)
    _Site.exc = "ValueError"
    assert _as_framed(_Loc(), tb, tb.message)
    # the raise formats the value in: a function's argument, no setting envdoctor knows
    _Site.names = ("shard_dim",)
    tb = Traceback(
        exc_type="ValueError", message="shard_dim=0 is not a valid data dimension for a 3D tensor", line_no=1
    )
    assert not _as_framed(_Loc(), tb, tb.message)


def test_a_frameless_tensor_dimension_value_is_no_refused_setting():
    rules = _rules(
        "ValueError: shard_dim=0 is not a valid data dimension for a 3D tensor (expected 1 or 2)\n"
    )
    assert rules == [("TRI003", "warning")]


# -- a catalogue entry that names its frame, placed by the index in a log without frames ----------

QUANTIZED = (
    "ValueError: You cannot perform fine-tuning on purely quantized models. Please attach trainable adapters "
    "on top of the quantized model to correctly perform fine-tuning. Please see: "
    "https://huggingface.co/docs/transformers/peft for more details\n"
)


def _frame_only_entry(monkeypatch, frames):
    """The catalogue's quantized-model entry found only by its ``raised`` (exception, message,
    frames): no symptom of it is read, so its frame is what locates it."""
    import dataclasses

    from envdoctor.triage import catalogue, structural

    entry = next(e for e in structural._entries() if e.id == "fine-tuning-a-purely-quantized-model")
    entry = dataclasses.replace(
        entry, symptoms=(), symptom_decides=False, raised=("ValueError", "purely quantized", frames)
    )
    monkeypatch.setattr(structural, "_entries", lambda: [entry])
    monkeypatch.setattr(catalogue, "_entries", lambda: [])
    catalogue.catalogue.cache_clear()


def test_a_frame_entry_matches_a_frameless_log_the_index_places_at_its_frame(monkeypatch):
    _frame_only_entry(
        monkeypatch, (("transformers", "trainer.py", "__init__"), ("transformers", "trainer_utils.py", ""))
    )
    try:
        found = [f for f in _all(QUANTIZED) if f.rule == "TRI011"]
        assert len(found) == 1
        assert "placed by its message" in found[0].message and "Trainer.__init__" in found[0].message
        assert found[0].evidence["located_by"] == "raise-site index"
    finally:
        from envdoctor.triage import catalogue

        monkeypatch.undo()
        catalogue.catalogue.cache_clear()


def test_a_frame_entry_stays_off_a_frameless_log_placed_elsewhere(monkeypatch):
    _frame_only_entry(monkeypatch, (("transformers", "trainer.py", "__init__"),))  # not trainer_utils.py's
    try:
        assert not any(f.rule == "TRI011" for f in _all(QUANTIZED))
    finally:
        from envdoctor.triage import catalogue

        monkeypatch.undo()
        catalogue.catalogue.cache_clear()
