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


def test_the_lines_after_the_template_s_end_are_not_the_message():
    # the run's next records have no prefix the scan knows (wandb's, srun's, a bare sentence): the
    # message ends where the raise's template ends, not at the blank line
    tail = (
        "wandb: 🚀 View run fancy_run at: https://wandb.ai/me/proj/runs/abc\n"
        "srun: error: node12: task 0: Exited with exit code 1\n"
        "Please set the environment variable use_fast_tokenizer=False to silence this\n"
    )
    f = _rules(PADDING_FREE + tail)["TRI012"]
    assert "set `max_length=None`.”" in f.message
    assert "wandb" not in f.message and "srun" not in f.message and "use_fast_tokenizer" not in f.message


def test_the_check_raised_in_unsloth_s_copy_of_the_trainer_is_trl_s_and_placed():
    # held out (review rv19b): Red-Hat-AI-Innovation-Team/training_hub#93 and unslothai/unsloth#7951
    # show the frame of Unsloth's generated trainer, and #7951 wraps the message elsewhere
    hub93 = 'File "UnslothSFTTrainer.py", line 1150, in __init__\n    raise ValueError(\n' + PADDING_FREE
    us7951 = (
        'File ".../unsloth_compiled_cache/UnslothSFTTrainer.py", line 1310, in __init__\n'
        "    raise ValueError(...)\n"
        "ValueError: When `padding_free=True` without packing, `max_length` is not enforced. Either enable\n"
        "packing (e.g., `packing=True, packing_strategy='bfd'`), provide already truncated inputs, or set\n"
        "`max_length=None`.\n"
    )
    for text in (hub93, us7951):
        f = _rules(text)["TRI012"]
        assert f.severity == Severity.ERROR and "SFTTrainer.__init__" in f.message
        assert f.fix.startswith("the message's own fix: Either enable packing")


def test_the_same_message_raised_in_the_user_s_own_file_is_not_placed_in_trl():
    text = 'File "/home/me/train.py", line 12, in main\n    raise ValueError(\n' + PADDING_FREE
    assert "TRI012" not in _rules(text)


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


def test_a_class_older_than_every_release_read_is_a_warning():
    # vLLM's EngineArgs is older than 0.7.2, the oldest vLLM release read, and no older index has it
    f = _rules("TypeError: EngineArgs.__init__() got an unexpected keyword argument 'foo_bar'\n")["TRI009"]
    assert f.severity == Severity.WARNING and "releases before it are not read" in f.message
    assert f.fix.startswith("remove foo_bar= from the EngineArgs(...) call")


def test_a_class_whose_older_releases_are_read_but_not_a_base_of_it_says_which_base():
    # huggingface/peft#1511 (held out, review rv19b): "use_original_init is not a valid argument,
    # please remove it"; LoraConfig's older releases are in the config-field index, its base
    # PeftConfigMixin there is not: a warning that names that base, not "releases before it are
    # not read" beside "20 older ones' configuration classes"
    f = _rules("TypeError: LoraConfig.__init__() got an unexpected keyword argument 'use_original_init'\n")[
        "TRI009"
    ]
    assert f.severity == Severity.WARNING
    assert (
        "older ones' configuration classes" in f.message
        and "releases before it are not read" not in f.message
    )
    assert "base PeftConfigMixin in those older releases is not read" in f.message
    assert f.fix.startswith("remove use_original_init= from the LoraConfig(...) call")


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


# -- the configuration classes of the releases before the symbol history ----------------------------


def test_a_keyword_that_came_with_an_older_release_says_the_installed_one_is_older():
    # peft's symbol history starts at 0.13.0, where every LoraConfig takes use_dora; the config-field
    # index reads 0.0.1-0.12.0 from peft's git history: use_dora came with 0.9.0
    f = _rules("TypeError: LoraConfig.__init__() got an unexpected keyword argument 'use_dora'\n")["TRI009"]
    assert f.severity == Severity.ERROR
    assert "peft takes from 0.9.0 on (0.8.2 and earlier have no such field" in f.message
    assert f.fix.startswith("pip install 'peft>=0.9.0'")


def test_a_log_showing_a_release_that_takes_the_field_is_not_told_it_is_older():
    # review rv19b: "pip install 'peft>=0.10.0'" where the log shows peft 0.12.0 clears nothing
    text = "peft==0.12.0\nTypeError: LoraConfig.__init__() got an unexpected keyword argument 'layer_replication'\n"
    f = _rules(text).get("TRI009")
    assert f is None or "older than 0.10.0" not in f.message
    older = "peft==0.9.0\nTypeError: LoraConfig.__init__() got an unexpected keyword argument 'layer_replication'\n"
    assert "peft>=0.10.0" in _rules(older)["TRI009"].fix


def test_a_field_an_older_release_removed_is_drift_not_another_class_field():
    f = _rules("TypeError: CPOConfig.__init__() got an unexpected keyword argument 'max_target_length'\n")[
        "TRI009"
    ]
    assert f.severity == Severity.ERROR
    assert "a field of trl's CPOConfig in 0.8.2–0.10.1 only (removed in 0.11.0" in f.message
    assert "pip install 'trl<=0.10.1'" in f.fix and "another class's field" not in f.message


def test_the_older_index_completes_the_history_of_a_class_older_than_the_symbol_history():
    # fms-hf-tuning#198 (dev set 17 logs17b/008): SFTConfig's birth (0.9.3) is read, TrainingArguments
    # (transformers') asked through its own history: an error
    f = _rules(FMS)["TRI009"]
    assert f.severity == Severity.ERROR
    assert "SFTConfig first appears in trl 0.9.3: these are all its releases" in f.message


def test_a_keyword_every_release_takes_is_no_answer_of_the_older_index():
    from envdoctor.triage import symbols
    from envdoctor.triage.traceback import Traceback

    tb = Traceback(
        exc_type="TypeError", message="LoraConfig.__init__() got an unexpected keyword argument 'r'"
    )
    assert symbols.added_field(tb) is None  # every release read takes r: something else failed


def test_a_warning_lift_gives_way_to_the_refusal_of_a_placed_guard():
    # dev heldout-2026-11-28h/logs3/006: Unsloth's multi-GPU refusal, its three lines placed in
    # unsloth 2025.2.1-2025.3.10 (gone in 2025.3.11 by a commit that does not say it lifts it)
    text = (
        "RuntimeError: Unsloth currently does not work on multi GPU setups - sadly we are a 2 brother team so enabling it will require much more work, so we have to prioritize. Please understand!\n"
        "We do have a separate beta version, which you can contact us about!\n"
        "Thank you for your understanding and we appreciate it immensely!\n"
    )
    found = _rules(text)
    assert "TRI012" in found and "TRI014" not in found
    assert found["TRI012"].severity == Severity.ERROR


# -- scripts/derive_config_fields.py on a git history built here ------------------------------------


def _git(repo, *args: str) -> None:
    import subprocess

    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        check=True,
        capture_output=True,
    )


def test_the_derive_script_reads_each_release_tags_configuration_classes(tmp_path):
    import gzip
    import json

    from envdoctor.knowledge.config_fields import SCHEMA, Fields
    from tests.triage.helpers import script

    repo = tmp_path / "src"
    (repo / "pkg").mkdir(parents=True)
    _git(repo, "init", "-q")
    base = "class BaseConfig:\n    def __init__(self, a, **kwargs): ...\n"
    one = "from dataclasses import dataclass\n@dataclass\nclass LoraConfig(Mixin):\n    r: int = 8\n    old: int = 1\n"
    two = "from dataclasses import dataclass\n@dataclass\nclass LoraConfig(Mixin):\n    r: int = 8\n    use_dora: bool = False\n"
    for tag, src in (("v0.1.0", one), ("v0.2.0", two), ("v0.3.0", two)):
        (repo / "pkg" / "lora.py").write_text(src)
        (repo / "pkg" / "base.py").write_text(base if tag != "v0.1.0" else "")
        (repo / "pkg" / "helper.py").write_text("class NotAConfigThing:\n    x: int = 1\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", tag)
        _git(repo, "tag", tag)
    out = tmp_path / "pkg.json.gz"
    derive = script("derive_config_fields")
    assert derive.main(["--git-dir", str(repo / ".git"), "--package", "pkg", "--root", "pkg", "--since", "0.1.0",
                        "--until", "0.3.0", "--out", str(out)]) == 0  # fmt: skip
    first = out.read_bytes()
    doc = json.loads(gzip.decompress(first))
    assert doc["schema"] == SCHEMA and doc["releases"] == ["0.1.0", "0.2.0"] and doc["from_first"] is True
    assert set(doc["classes"]) == {"LoraConfig", "BaseConfig"}  # not NotAConfigThing, not 0.3.0
    lora = doc["classes"]["LoraConfig"]
    assert lora["f"] == {"old": "0-0", "r": "0-1", "use_dora": "1-1"} and lora["b"] == {"Mixin": "0-1"}
    assert doc["classes"]["BaseConfig"]["f"] == {"**": "1-1", "a": "1-1"}
    fields = Fields("pkg", tuple(doc["releases"]), doc["until"], doc["from_first"], doc["classes"])
    assert fields.takes("LoraConfig", "use_dora") == (0b10, frozenset({"Mixin"}))
    assert fields.born("LoraConfig") == "0.1.0"
    derive.main(["--git-dir", str(repo / ".git"), "--package", "pkg", "--root", "pkg", "--since", "0.1.0",
                 "--until", "0.3.0", "--out", str(out)])  # fmt: skip
    assert out.read_bytes() == first  # reproducible: the same tags give the same bytes


# -- a placed refusal's words ------------------------------------------------------------------------

MXFP4 = (
    "NotImplementedError: Backwards pass using MXFP4 is still under construction!\n"
    "Instead, use `unsloth/gpt-oss-20b-BF16` for bfloat16 training which will work for LoRA.\n"
    "Or, use `load_in_4bit = True` which allows finetuning.\n"
)


def test_a_not_implemented_error_that_gives_its_own_fix_is_a_refusal_wherever_placed():
    # dev heldout-2026-11-29h/logs16b/009: unsloth_zoo's MXFP4 backward, placed by its three lines
    f = _rules(MXFP4)["TRI012"]
    assert f.severity == Severity.ERROR
    assert "unsloth_zoo refused" in f.message and "Mxfp4GptOssExperts_Training.backward" in f.message
    assert f.fix.startswith("the message's own fix: Instead, use `unsloth/gpt-oss-20b-BF16`")
    assert "(what it names: load_in_4bit=True)" in f.message  # a piece of a model's name is no flag


def test_a_not_implemented_error_with_no_fix_of_its_own_stays_unanswered_by_it():
    # dev heldout-2026-11-28g/logs2/022: verl's reward dispatch on an empty data_source (the data's)
    found = _rules("NotImplementedError: Reward function is not implemented for data_source=''\n")
    assert "TRI012" not in found


def test_a_word_the_message_calls_an_argument_is_the_option_it_names():
    # dev heldout-2026-11-29/logs3/011: SFTTrainer's packing + completion-only collator check
    f = _rules(
        "ValueError: You passed a `DataCollatorForCompletionOnlyLM` to the SFTTrainer. This is not compatible with the `packing` argument.\n"
    )["TRI012"]
    assert "(what it names: packing)" in f.message and "change what it refuses (packing)" in f.fix


def test_a_path_s_piece_is_no_option():
    from envdoctor.triage.refusal import _options

    assert _options("task 0 requires image 'swebench/sweb.eval.x86_64.*:latest', but no container") == []
    assert _options("set trainer.args.max_length lower") == ["max_length"]


def test_a_check_demanding_a_class_names_the_class_it_takes():
    # dev heldout-2026-11-28g/logs2/017: TRL's PPOTrainer handed a plain CodeGenForCausalLM
    f = _rules(
        "*** ValueError: model must be a PreTrainedModelWrapper, got <class 'transformers.models.codegen.modeling_codegen.CodeGenForCausalLM'> - supported architectures are: (<class 'trl.models.modeling_value_head.AutoModelForCausalLMWithValueHead'>, <class 'trl.models.modeling_value_head.AutoModelForSeq2SeqLMWithValueHead'>)\n"
    )["TRI012"]
    assert f.severity == Severity.ERROR
    assert f.fix.startswith(
        "pass model as a PreTrainedModelWrapper (AutoModelForCausalLMWithValueHead, "
        "AutoModelForSeq2SeqLMWithValueHead), not a CodeGenForCausalLM"
    )
    assert "modeling_codegen" not in f.message.split("”")[-1]  # no module path named as an option


def test_a_config_class_named_without_its_init_is_read_as_its_constructor():
    f = _rules("TypeError: SFTConfig() got an unexpected keyword argument 'cache_dir'\n")["TRI009"]
    assert "passes cache_dir= to SFTConfig()" in f.message and f.severity == Severity.ERROR
    # a function of that shape is not a configuration class: left as it was
    assert "TRI009" not in _rules(
        "TypeError: build_config() got an unexpected keyword argument 'cache_dir'\n"
    )
