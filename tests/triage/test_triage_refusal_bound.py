# ruff: noqa: E501 - log lines are quoted as programs print them
"""TRI012's certainty: a refusal whose raise only some releases have is bound to them (which releases
refuse, the first that accepts, both fixes), a refusal every release makes stays "whatever the
releases", and a value ≤ 0 the framework derived from the run's inputs (a prompt longer than the
length budget, a dataset smaller than a batch) is fixed on those inputs, not on the option.

Cases from held-out set 16 (now dev data): PKU-Alignment/align-anything#140 (rope_scaling refused by
an old transformers), johnson7788/RLDecisionAgent's Error.md files (TRL's eos_token check, swift's
max_tokens=-3173, verl's steps_per_epoch=0)."""

from __future__ import annotations

import time

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes


def _tri012(text: str):
    found = [f for f in findings(scan_bytes(text)) if f.rule == "TRI012"]
    assert len(found) == 1, findings(scan_bytes(text))
    return found[0]


# -- a refusal bound to a range of releases ---------------------------------------------------------

ROPE = (
    "ValueError: `rope_scaling` must be a dictionary with with two fields, `type` and `factor`, got "
    "{'factor': 8.0, 'high_freq_factor': 4.0, 'low_freq_factor': 1.0, 'original_max_position_embeddings': 8192, 'rope_type': 'llama3'}\n"
    "vllm 0.5.1 requires tokenizers>=0.19.1, but you have tokenizers 0.15.2 which is incompatible.\n"
)


def test_a_refusal_whose_check_later_releases_dropped_is_bound_to_the_releases_that_have_it():
    f = _tri012(ROPE)
    assert f.severity == Severity.ERROR
    assert "whatever the releases" not in f.fix and "whatever the releases" not in f.message
    assert "5.0.0 is the first release without any copy of this check" in f.message
    assert "whether a release before 5.0.0 accepts it depends on the model's own class" in f.message
    assert (
        f.fix.startswith("install transformers 5.0.0 or later")
        and "pip install 'transformers>=5.0.0'" in f.fix
    )
    assert "or change what it refuses (rope_scaling" in f.fix
    # the check named once for its copies, not an arbitrary class's copy
    assert (
        "`_rope_scaling_validation` check, copied into" in f.message and "ChameleonConfig's copy" in f.message
    )
    assert "tokenizers" not in f.message.split("(line")[0]  # pip's line after it is no part of the message


def test_the_model_type_the_log_shows_names_whose_copy_raised_it():
    f = _tri012("{'architectures': ['LlamaForCausalLM'], 'model_type': 'llama'}\n" + ROPE)
    assert "the run's model_type is 'llama'" in f.message


DBRX = """\
Traceback (most recent call last):
  File "/home/u/serve.py", line 12, in <module>
    llm = LLM("databricks/dbrx-instruct", tie_word_embeddings=True)
  File "/env/lib/python3.11/site-packages/vllm/model_executor/models/dbrx.py", line 410, in __init__
    raise ValueError(
ValueError: tie_word_embeddings is not supported for Dbrx models.
"""


def test_a_refusal_every_release_makes_stays_whatever_the_releases():
    f = _tri012(DBRX)
    assert f.severity == Severity.ERROR
    assert "first release without" not in f.message and "pip install" not in f.fix


# a token the tokenizer lacks (Unsloth's '<EOS_TOKEN>' placeholder is a catalogue entry of its own:
# unsloth-imported-after-trl-eos-placeholder)
EOS = """\
Traceback (most recent call last):
  File "/workspace/tools/train_unsloth_qwen_SFT.py", line 229, in build_trainer
    trainer = SFTTrainer(
  File "/usr/local/lib/python3.10/dist-packages/trl/trainer/sft_trainer.py", line 380, in __init__
    raise ValueError(
ValueError: The specified `eos_token` ('<|eot_id|>') is not found in the vocabulary of the given `processing_class` (Qwen2TokenizerFast). Ensure that the `eos_token` exists in the vocabulary before using it as an EOS token.
"""


def test_a_check_a_release_added_names_that_release_and_the_one_before():
    f = _tri012(EOS)
    assert f.severity == Severity.ERROR
    assert "the check came with 0.17.0" in f.message and "whatever the releases" not in f.fix
    assert "pin 'trl<0.17.0'" in f.fix and f.fix.startswith("change the setting the message names")


def test_a_trl_check_in_every_release_stays_whatever_the_releases():
    text = EOS.replace("trainer/sft_trainer.py", "trainer/grpo_config.py").replace(
        "The specified `eos_token` ('<|eot_id|>') is not found in the vocabulary of the given `processing_class` (Qwen2TokenizerFast). Ensure that the `eos_token` exists in the vocabulary before using it as an EOS token.",
        "Invented check words no TRL release raises, for the quiet pair: num_generations must be 3.",
    )
    f = _tri012(text)
    assert "whatever the releases" in f.fix and "pin" not in f.fix


# -- a value the framework derived from the data ----------------------------------------------------

SWIFT = """\
[WARNING:swift] max_model_len(2048) - num_tokens(1605) < max_tokens(1024). Setting max_tokens: 443
[WARNING:swift] max_model_len(2048) - num_tokens(5221) < max_tokens(1024). Setting max_tokens: -3173
Traceback (most recent call last):
  File "/workspace/ms-swift/swift/llm/infer/infer_engine/vllm_engine.py", line 406, in _prepare_generation_config
    res = SamplingParams(**kwargs)
  File "/usr/local/lib/python3.11/site-packages/vllm/sampling_params.py", line 342, in __post_init__
    self._verify_args()
  File "/usr/local/lib/python3.11/site-packages/vllm/sampling_params.py", line 397, in _verify_args
    raise ValueError(
ValueError: max_tokens must be at least 1, got -3173.
"""


def test_a_negative_value_the_framework_derived_is_fixed_on_the_prompt_and_the_length_budget():
    f = _tri012(SWIFT)
    assert f.severity == Severity.ERROR
    assert (
        "derived it from the room left for the completion" in f.message
        and "ms-swift (the caller)" in f.message
    )
    assert "num_tokens(5221)" in f.message  # the log's own line saying how
    assert "max_model_len" in f.fix and "prompts longer" in f.fix and "max_tokens" not in f.fix


def test_a_value_the_run_set_itself_is_the_option_to_change():
    f = _tri012("+ swift rollout --model Qwen --max_tokens -3173\n" + SWIFT.split("\n", 2)[2])
    assert "derived" not in f.message and "max_tokens" in f.fix


VERL = """\
Number of steps/epoch 0, number of epochs 6, total number of steps 0
{'data': {'train_batch_size': 32, 'micro_batch_size_per_gpu': 4}, 'trainer': {'total_epochs': 6}}
Traceback (most recent call last):
  File "/home/u/verl/verl/trainer/fsdp_sft_trainer.py", line 794, in run_sft
    trainer.fit()
  File "/home/u/verl/verl/trainer/fsdp_sft_trainer.py", line 716, in fit
    start_epoch = global_step // self.steps_per_epoch
ZeroDivisionError: integer division or modulo by zero
"""


def test_a_zero_count_of_steps_is_the_dataset_smaller_than_a_batch():
    f = _tri012(VERL)
    assert f.severity == Severity.ERROR
    assert "dataset smaller than one batch" in f.message and "Number of steps/epoch 0" in f.message
    assert "row count" in f.fix and "train_batch_size" in f.fix and "number of GPUs" not in f.fix


def test_a_zero_divisor_the_config_sets_keeps_the_options_answer():
    text = VERL.replace(
        "'trainer': {'total_epochs': 6}", "'trainer': {'total_epochs': 6, 'steps_per_epoch': 0}"
    )
    f = _tri012(text)
    assert "derived it from" not in f.message and "set steps_per_epoch" in f.fix


def test_a_zero_with_nothing_saying_how_it_came_is_not_called_derived():
    f = _tri012(VERL.split("\n", 2)[2])  # no line of the log derives it, no config dump
    assert "derived it from" not in f.message


# -- bounded on hostile input -----------------------------------------------------------------------


def test_hostile_input_is_bounded():
    from envdoctor.triage.draft import Log
    from envdoctor.triage.refusal import derived, refused_value, sets_option

    anchors = "`rope_scaling` must be a dictionary with with two fields, `type` and `factor`, got " * 200
    start = time.perf_counter()
    findings(scan_bytes("ValueError: " + anchors + "{}\n"))
    line = ("max_tokens must be " + "x" * 90 + " got -1 ") * 500
    assert refused_value(line) is not None
    head = (("max_tokens=" + "a" * 5000 + " -3173\n") * 300).encode()
    log = Log(by_sig={}, counts={}, ctx=None, head=head)
    sets_option(log, "max_tokens")
    derived("max_tokens", -3173, log)
    assert time.perf_counter() - start < 10


# -- no release-bound claim where the check went on in other words, or its class went --------------

ZERO3 = """\
Traceback (most recent call last):
  File "/LMFlow/src/lmflow/models/hf_decoder_model.py", line 284, in __init__
    self.backend_model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, low_cpu_mem_usage=True)
  File "/env/lib/python3.10/site-packages/transformers/modeling_utils.py", line 2445, in from_pretrained
    raise ValueError(
ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a `device_map`.
"""


def test_a_check_later_releases_reworded_or_moved_is_no_release_bound():
    f = _tri012(ZERO3)  # 4.51 rewords it, 5.0 moves it to integrations/accelerate.py: still refused
    assert "first release without" not in f.message and "pip install" not in f.fix
    assert "refuses this configuration" in f.fix


def test_a_check_whose_class_later_releases_removed_is_no_release_bound():
    f = _tri012(
        "ValueError: model must be a PreTrainedModelWrapper, got <class 'transformers.models.codegen.modeling_codegen.CodeGenForCausalLM'> - supported architectures are: (<class 'trl.models.modeling_value_head.AutoModelForCausalLMWithValueHead'>,)\n"
    )
    assert "first release without" not in f.message and "pip install 'trl" not in f.fix


def test_a_support_gate_a_release_added_offers_no_older_release():
    f = _tri012(
        "RuntimeError: Unsloth: Fast inference is only supported for Language models and\n"
        "Qwen2.5-VL, Qwen3-VL, Gemma3, Mistral3 among vision models. Found architectures: siglip, qwen3_5!\n"
    )  # the log's line break inside the message (set 15: the list a release builds at run time)
    assert "the check came with" in f.message and "pin" not in f.fix
    assert "install a release of Unsloth that does" in f.fix


# https://github.com/modelscope/ms-swift/issues/6441: the run sets max_new_tokens 4096, swift turns it
# into -5923 for a prompt of 14115 tokens against max_model_len 8192
PT_ENGINE = """\
CUDA_VISIBLE_DEVICES=0,1,2,3 swift infer --infer_backend pt --max_model_len 8192 --temperature 0 --max_new_tokens 4096
[WARNING:swift] max_model_len(8192) - num_tokens(14115) < max_tokens(4096). Setting max_tokens: -5923
Traceback (most recent call last):
  File "/home/u/ms-swift/swift/llm/infer/infer_engine/pt_engine.py", line 134, in _infer_worker
    res_list_or_gen = self._infer(**kwargs)
  File "/env/lib/python3.10/site-packages/transformers/generation/configuration_utils.py", line 580, in validate
    raise ValueError(f"`max_new_tokens` must be greater than 0, but is {self.max_new_tokens}.")
ValueError: `max_new_tokens` must be greater than 0, but is -5923.
"""


def test_a_value_the_run_set_that_the_framework_turned_negative_is_derived():
    f = _tri012(PT_ENGINE)
    assert "derived it from the room left for the completion" in f.message
    assert (
        "is not the run's setting (it sets max_new_tokens 4096; the framework turned it into -5923)"
        in f.message
    )
    assert "max_model_len" in f.fix and "max_new_tokens" not in f.fix


def test_the_run_setting_the_refused_value_itself_is_the_option():
    f = _tri012(PT_ENGINE.replace("--max_new_tokens 4096", "--max_new_tokens -5923"))
    assert "derived" not in f.message


# https://github.com/modelscope/ms-swift/issues/6023: 0 refused, swift's lines show how it derives it
ZERO_TOKENS = SWIFT.replace("Setting max_tokens: -3173", "Setting max_tokens: 8735").replace(
    "got -3173", "got 0"
)


def test_a_zero_the_framework_computes_as_its_lines_show_is_derived():
    f = _tri012(ZERO_TOKENS)
    assert "derived it from the room left" in f.message and "Setting max_tokens" in f.message


# https://github.com/modelscope/ms-swift/issues/3032 (held out): swift's args dump sets
# max_new_tokens=32 far into a long line; swift's pt engine turned it into -930
ARGS_DUMP = (
    "[INFO:swift] args: InferArguments(model='/mnt/ckpt/deepseek-vl2-small/checkpoint-880-merged', "
    "model_type='deepseek_vl2', bnb_4bit_use_double_quant=True, bnb_4bit_quant_storage=None, "
    "quant_method=None, quant_bits=None, hqq_axis=None, max_new_tokens=32, temperature=None, top_k=None, "
    "top_p=None, num_beams=1, stream=False, max_model_len=None, infer_backend='pt')\n"
    + PT_ENGINE.split("\n", 2)[2].replace("-5923", "-930")
)


def test_a_setting_far_into_a_config_dump_line_is_read_with_its_value():
    f = _tri012(ARGS_DUMP)
    assert "it sets max_new_tokens 32; the framework turned it into -930" in f.message
    assert "max_model_len" in f.fix and "max_new_tokens" not in f.fix


# a run's own "no limit" (SamplingParams(max_tokens=-1) behind **kwargs): -1, like 0, is no derivation
# without a line of the log saying how it came
USER_MINUS_ONE = """\
Traceback (most recent call last):
  File "/home/u/eval.py", line 41, in <module>
    params = SamplingParams(**gen_kwargs)
  File "/usr/local/lib/python3.10/site-packages/vllm/sampling_params.py", line 364, in __post_init__
    self._verify_args()
  File "/usr/local/lib/python3.10/site-packages/vllm/sampling_params.py", line 406, in _verify_args
    raise ValueError(
ValueError: max_tokens must be at least 1, got -1.
"""


def test_a_minus_one_with_nothing_saying_how_it_came_is_the_option():
    f = _tri012(USER_MINUS_ONE)
    assert "derived" not in f.message and "max_tokens" in f.fix


def test_a_large_negative_with_no_setting_shown_stays_derived():
    f = _tri012(USER_MINUS_ONE.replace("got -1.", "got -239."))
    assert "derived it from the room left" in f.message


def test_a_copy_unknown_is_not_refused_by_every_release_of_the_range():
    f = _tri012(ROPE)  # Llama's config accepts llama3 rope in that range: only some classes refuse it
    assert "every release in that range" not in f.fix
    assert "where your model's class still has its copy make it" in f.fix


def test_a_model_type_with_no_copy_indexed_is_a_release_older_than_the_index():
    # https://github.com/PKU-Alignment/align-anything/issues/140: Llama-3.1's rope refused by a
    # transformers too old for it (Llama's copy left before the first release indexed)
    f = _tri012("{'architectures': ['LlamaForCausalLM'], 'model_type': 'llama'}\n" + ROPE)
    assert "its config class's copy raised it" not in f.message
    assert "has a copy of this check in the class of model_type 'llama'" in f.message
    assert "older than 4.45.2" in f.message
    assert f.fix.startswith("install transformers 4.45.2 or later") and "every release" not in f.fix
    assert "5.0.0" not in f.fix


def test_a_model_type_whose_class_has_a_copy_names_that_copy():
    f = _tri012("{'architectures': ['FuyuForCausalLM'], 'model_type': 'fuyu'}\n" + ROPE)
    assert "the run's model_type is 'fuyu': its config class's copy raised it" in f.message
    assert "5.0.0" in f.fix


def test_a_range_with_the_check_is_not_said_to_refuse_the_run():
    # Unsloth's fast-inference gate: the same message in every later release, its list of models
    # growing (https://github.com/unslothai/unsloth/pull/10891 adds qwen3_5): "have this check"
    from pathlib import Path

    log = Path(__file__).resolve().parents[2] / "docs/validation/heldout-2026-11-28c/logs2/026.log"
    f = _tri012(log.read_text())
    assert "have this check" in f.message and "refuse it" not in f.message


NO_SYNC = """\
Traceback (most recent call last):
  File "/env/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 1995, in no_sync
    assert not self.zero_optimization_partition_gradients(), \\
AssertionError: no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage 2
"""


def test_a_check_in_every_release_indexed_says_where_the_index_starts():
    """deepspeed's `no_sync` check: envdoctor indexes DeepSpeed from 0.13.0, and 0.11.1 (the
    release a repository pinned) has no such check: "whatever the releases" claimed too much
    (held-out set 21, e005)."""
    f = _tri012(NO_SYNC)
    assert "whatever the releases" not in f.fix
    assert "DeepSpeed refuses this configuration in every release" in f.fix
