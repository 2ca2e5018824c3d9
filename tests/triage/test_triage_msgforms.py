# ruff: noqa: E501 - log lines are quoted as programs print them
"""Frameless messages placed and answered (issue #36, items 1-2).

1. A message that goes on over the next lines without a frame (TRL's padding-free refusal, dev set 17
   heldout-2026-11-29i/logs17b/logs/004.log, Red-Hat-AI-Innovation-Team/training_hub#104): the
   raise-site index matches the lines joined (bounded: a blank line, another exception, a logger's
   line or another prefix ends it) and TRI012 answers it as a one-line refusal.
2. ``X.__init__() got an unexpected keyword argument 'k'`` for a configuration class that no release
   read ever let take ``k`` (dev set 17 logs17b/logs/008.log, foundation-model-stack/fms-hf-tuning#198:
   fms-hf-tuning passed its own TrainingArguments fields to TRL's SFTConfig): the code building it
   passes another class's field, the key to remove; an error where the releases read are the class's
   whole history.
"""

from __future__ import annotations

from envdoctor.findings import Severity
from envdoctor.triage.draft import Log
from envdoctor.triage.raisesites import continuation
from tests.triage.helpers import findings, scan_bytes

PADDING_FREE = (
    "ValueError: When `padding_free=True` without packing, `max_length` is not enforced.\n"
    "Either enable packing (e.g., `packing=True, packing_strategy='bfd'`),\n"
    "provide already truncated inputs, or set `max_length=None`.\n"
)


def _rules(text: str) -> dict[str, object]:
    return {f.rule: f for f in findings(scan_bytes(text))}


def test_a_message_continued_on_the_next_lines_is_placed_and_answered_as_a_refusal():
    f = _rules(PADDING_FREE)["TRI012"]
    assert f.severity == Severity.ERROR
    assert "SFTTrainer.__init__" in f.message and "placed by its message" in f.message
    assert (
        "packing=True" in f.message and "trl 1.0.0" in f.message
    )  # release-bound: the check came with 1.0.0
    assert f.fix.startswith("the message's own fix: Either enable packing")
    assert "pin 'trl<1.0.0'" in f.fix


def test_the_first_line_alone_is_no_template_of_a_raise():
    found = _rules(PADDING_FREE.splitlines()[0] + "\n")
    assert "TRI012" not in found and "TRI034" not in found


def test_a_blank_line_ends_the_message():
    lines = PADDING_FREE.splitlines()
    found = _rules("\n".join([lines[0], "", *lines[1:]]) + "\n")
    assert "TRI012" not in found


def test_another_ranks_line_is_not_the_message_going_on():
    lines = PADDING_FREE.splitlines()
    text = f"[rank0]: {lines[0]}\n[rank1]: {lines[1]}\n[rank1]: {lines[2]}\n"
    assert "TRI012" not in _rules(text)
    same = f"[rank0]: {lines[0]}\n[rank0]: {lines[1]}\n[rank0]: {lines[2]}\n"
    assert "TRI012" in _rules(same)


def test_continuation_stops_at_a_frame_an_exception_and_a_logger_line():
    head = b"ValueError: first line.\nsecond line of it\nINFO 2026-11-29 12:00:00 next record\nmore\n"
    assert continuation(Log({}, {}, None, head=head), 1) == ["second line of it"]
    head = b"ValueError: first line.\nKeyError: 'x'\n"
    assert continuation(Log({}, {}, None, head=head), 1) == []
    head = b'ValueError: first line.\n  File "/x.py", line 1, in f\n'
    assert continuation(Log({}, {}, None, head=head), 1) == []
    many = b"ValueError: a.\n" + b"more words\n" * 20
    assert len(continuation(Log({}, {}, None, head=many), 1)) == 8  # bounded


# -- a configuration class handed a field it never had ----------------------------------------------

FMS = "TypeError: SFTConfig.__init__() got an unexpected keyword argument 'cache_dir'\n"


def test_a_config_class_handed_a_field_no_release_read_has_names_the_key_to_remove():
    f = _rules(FMS)["TRI009"]
    assert "passes cache_dir= to SFTConfig()" in f.message
    assert "a wrapper package, or your script" in f.message
    assert f.fix.startswith("remove cache_dir= from the SFTConfig(...) call")
    assert "upgrade it" in f.fix
    # SFTConfig is older than the oldest TRL release read: a release before it is not read
    assert f.severity == Severity.WARNING and "releases before it are not read" in f.message


def test_the_class_whose_whole_history_is_read_makes_it_an_error():
    f = _rules("TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'cache_dir'\n")["TRI009"]
    assert f.severity == Severity.ERROR
    assert "GRPOConfig first appears in trl 0.14.0" in f.message


def test_the_config_class_that_has_the_field_is_named():
    f = _rules("TypeError: DPOConfig.__init__() got an unexpected keyword argument 'dataset_text_field'\n")[
        "TRI009"
    ]
    assert "trl's SFTConfig takes dataset_text_field=" in f.message
    assert "set it on the class that has it: SFTConfig" in f.fix


def test_the_caller_frame_is_named_where_the_log_shows_it():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/app/tuning/sft_trainer.py", line 321, in train\n'
        "    training_args = SFTConfig(**transformer_kwargs)\n"
        "TypeError: SFTConfig.__init__() got an unexpected keyword argument 'cache_dir'\n"
    )
    f = _rules(text)["TRI009"]
    assert f.message.startswith("your code (/app/tuning/sft_trainer.py:321 in train) passes cache_dir=")


def test_a_class_that_is_no_configuration_stays_the_first_exceptions():
    found = _rules("TypeError: PreTrainedModel.__init__() got an unexpected keyword argument 'foo_bar'\n")
    assert "TRI009" not in found and "TRI003" in found


def test_a_removed_field_keeps_the_drift_answer_and_its_rename():
    f = _rules("TypeError: SFTConfig.__init__() got an unexpected keyword argument 'max_seq_length'\n")[
        "TRI009"
    ]
    assert "removed in trl 0.20.0" in f.message and "rename max_seq_length= to max_length=" in f.fix
    assert "never had" not in f.message and "another class's field" not in f.message
