# ruff: noqa: E501 - log lines are quoted as programs print them
"""TRI038: files and model code written for another release than the one that reads or calls them
(envdoctor/triage/artifacts.py): a loader's file (the forms table, the symbol history of peft's
configuration classes), a model's forward older than the transformers that calls it, a project's
line written for another architecture (the model-attribute index)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.helpers import findings, scan_bytes

DEV = Path(__file__).resolve().parents[2] / "docs" / "validation"
SET18 = DEV / "heldout-2026-11-30"


def _all(text: str | bytes):
    return findings(scan_bytes(text))


def _tri038(text: str | bytes):
    return next((f for f in _all(text) if f.rule == "TRI038"), None)


# -- 1. a file a loader reads --------------------------------------------------------------------

# set 18's c004 (dev): the adapter's tokenizer saved by transformers 5, read by the pinned 4.56.2
C004 = (SET18 / "logs18c" / "logs" / "004.log").read_bytes()

# the same failure with the frames of transformers 4.57 and the reader's version shown (pip freeze)
TOKENIZER_LIST = """transformers==4.57.1
Traceback (most recent call last):
  File "/home/u/merge.py", line 12, in <module>
    tok = AutoTokenizer.from_pretrained("out/adapter")
  File "/usr/lib/python3.11/site-packages/transformers/models/auto/tokenization_auto.py", line 1138, in from_pretrained
    return tokenizer_class.from_pretrained(pretrained_model_name_or_path, *inputs, **kwargs)
  File "/usr/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 2097, in from_pretrained
    return cls._from_pretrained(
  File "/usr/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 2343, in _from_pretrained
    tokenizer = cls(*init_inputs, **init_kwargs)
  File "/usr/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 1443, in __init__
    self._set_model_specific_special_tokens(special_tokens=self.extra_special_tokens)
  File "/usr/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 1181, in _set_model_specific_special_tokens
    self.SPECIAL_TOKENS_ATTRIBUTES = self.SPECIAL_TOKENS_ATTRIBUTES + list(special_tokens.keys())
AttributeError: 'list' object has no attribute 'keys'
"""

# the same message from the user's own code (no tokenizer loader): not a file's form
LIST_KEYS_USER = """Traceback (most recent call last):
  File "/home/u/prep.py", line 30, in <module>
    for k in rows.keys():
AttributeError: 'list' object has no attribute 'keys'
"""

# lllyasviel/FramePack#147 (the reporter's traceback): tokenizer.json saved by tokenizers >= 0.20
FRAMEPACK_147 = """Traceback (most recent call last):
  File "E:\\ai\\framepack_cu126_torch26\\webui\\demo_gradio.py", line 51, in <module>
    tokenizer = LlamaTokenizerFast.from_pretrained("hunyuanvideo-community/HunyuanVideo", subfolder='tokenizer')
  File "C:\\XX\\AppData\\Roaming\\Python\\Python310\\site-packages\\transformers\\tokenization_utils_base.py", line 2029, in from_pretrained
    return cls._from_pretrained(
  File "C:\\XX\\AppData\\Roaming\\Python\\Python310\\site-packages\\transformers\\tokenization_utils_base.py", line 2261, in _from_pretrained
    tokenizer = cls(*init_inputs, **init_kwargs)
  File "C:\\XX\\AppData\\Roaming\\Python\\Python310\\site-packages\\transformers\\models\\llama\\tokenization_llama_fast.py", line 124, in __init__
    super().__init__(
  File "C:\\XX\\AppData\\Roaming\\Python\\Python310\\site-packages\\transformers\\tokenization_utils_fast.py", line 111, in __init__
    fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)
Exception: data did not match any variant of untagged enum ModelWrapper at line 1251019 column 3
"""

# peft's loader handing adapter_config.json's keys to LoraConfig (a newer peft wrote exclude_modules)
PEFT_LOADER = """Traceback (most recent call last):
  File "/home/u/run.py", line 12, in <module>
    model = PeftModel.from_pretrained(base, "out/adapter")
  File "/usr/lib/python3.10/site-packages/peft/peft_model.py", line 439, in from_pretrained
    PeftConfig._get_peft_type(
  File "/usr/lib/python3.10/site-packages/peft/config.py", line 152, in from_pretrained
    config = config_cls(**class_kwargs)
TypeError: LoraConfig.__init__() got an unexpected keyword argument 'exclude_modules'
"""

# the user's own LoraConfig(...) call with the same key: the code, not a file (TRI009's drift)
PEFT_USER_CALL = """Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    cfg = LoraConfig(r=16, exclude_modules=["lm_head"])
TypeError: LoraConfig.__init__() got an unexpected keyword argument 'exclude_modules'
"""

# a user typo (huggingface/peft#1511's report): a key no peft release has
PEFT_TYPO = """Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    config = LoraConfig(r=16, lora_alpha=16, use_original_init=False)
TypeError: LoraConfig.__init__() got an unexpected keyword argument 'use_original_init'
"""

# oobabooga/textgen#2623: peft's own from_pretrained passing the caller's kwargs (a peft bug of its
# day, not a file): a key no PeftConfig release takes
PEFT_OWN_KWARGS = """Traceback (most recent call last):
  File "H:\\oobabooga_windows\\text-generation-webui\\modules\\LoRA.py", line 80, in add_lora_to_model
    shared.model = PeftModel.from_pretrained(shared.model, Path(f"{shared.args.lora_dir}/{lora_names[0]}"), **params)
  File "H:\\oobabooga_windows\\installer_files\\env\\lib\\site-packages\\peft\\peft_model.py", line 169, in from_pretrained
    PeftConfig.from_pretrained(model_id, subfolder=kwargs.get("subfolder", None), **kwargs).peft_type
  File "H:\\oobabooga_windows\\installer_files\\env\\lib\\site-packages\\peft\\utils\\config.py", line 114, in from_pretrained
    config = cls(**kwargs)
TypeError: PeftConfig.__init__() got an unexpected keyword argument 'dtype'
"""


def test_set18_c004_adapter_tokenizer_of_transformers_5_read_by_4_56_is_tri038():
    f = _tri038(C004)
    assert f is not None and f.severity.value == "error"
    assert "tokenizer_config.json" in f.message and "extra_special_tokens" in f.message
    assert "transformers 4.56.0 to 4.56.2" in f.message  # the frames' release, older than 5.0.0
    assert "peft >= 0.19.0" in f.message  # the log's own peft warning of the same folder
    assert "transformers>=5.0.0" in f.fix and "base model's tokenizer" in f.fix
    assert not any(g.rule == "TRI003" for g in _all(C004))


def test_a_tokenizer_list_read_by_4_57_is_tri038_and_quiet_where_the_reader_is_5():
    f = _tri038(TOKENIZER_LIST)
    assert f is not None and f.severity.value == "error" and "transformers 4.57.1" in f.message
    newer = TOKENIZER_LIST.replace("transformers==4.57.1", "transformers==5.1.0")
    assert _tri038(newer) is None  # the installed release reads the list: another cause


def test_the_same_message_in_the_users_code_is_not_a_files_form():
    assert _tri038(LIST_KEYS_USER) is None


def test_framepack_147_tokenizer_json_of_a_newer_tokenizers_is_tri038():
    f = _tri038(FRAMEPACK_147)
    assert f is not None and f.severity.value == "error"
    assert "tokenizer.json" in f.message and "tokenizers>=0.20.0" in f.fix


def test_the_modelwrapper_message_alone_is_a_warning():
    f = _tri038(
        "Exception: data did not match any variant of untagged enum ModelWrapper at line 1251012 column 3\n"
    )
    assert f is not None and f.severity.value == "warning"


@pytest.mark.parametrize(
    "text, first",
    [
        (PEFT_LOADER, "0.14.0"),
        ((DEV / "heldout-2026-11-29g" / "logs15b" / "logs" / "013.log").read_text(), "0.15.0"),
    ],
)
def test_peft_loader_handing_a_newer_adapter_config_key_is_tri038(text, first):
    f = _tri038(text)
    assert f is not None and f.severity.value == "error"
    assert "adapter_config.json" in f.message and f"peft>={first}" in f.fix
    assert not any(g.rule == "TRI009" for g in _all(text))


@pytest.mark.parametrize("text", [PEFT_USER_CALL, PEFT_TYPO, PEFT_OWN_KWARGS])
def test_a_config_call_of_the_users_a_typo_or_a_key_no_release_has_is_not_tri038(text):
    assert _tri038(text) is None


def test_peft_loader_quiet_where_the_log_shows_a_peft_that_takes_the_key():
    assert _tri038("peft==0.15.2\n" + PEFT_LOADER) is None


# -- 2. a keyword the caller's release started passing -------------------------------------------

B002 = (SET18 / "logs18b" / "logs" / "002.log").read_text()

GENERATE = """Traceback (most recent call last):
  File "/home/u/T2I-R1/src/infer.py", line 88, in <module>
    out = model.generate(**inputs, max_new_tokens=64)
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/_contextlib.py", line 116, in decorate_context
    return func(*args, **kwargs)
  File "/opt/conda/lib/python3.10/site-packages/transformers/generation/utils.py", line 2634, in generate
    result = self._sample(
  File "/opt/conda/lib/python3.10/site-packages/transformers/generation/utils.py", line 3615, in _sample
    outputs = self(**model_inputs, return_dict=True)
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1762, in _call_impl
    return forward_call(*args, **kwargs)
TypeError: LlavaQwenForCausalLM.forward() got an unexpected keyword argument 'cu_seq_lens_q'
"""

# a collator's batch handed to the model by a trainer (no generate): another caller
COLLATOR = """Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 3791, in compute_loss
    outputs = model(**inputs)
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1762, in _call_impl
    return forward_call(*args, **kwargs)
TypeError: LlavaQwenForCausalLM.forward() got an unexpected keyword argument 'cu_seq_lens_q'
"""


def test_set18_b002_remote_forward_without_frames_is_a_tri038_warning():
    f = _tri038(B002)
    assert f is not None and f.severity.value == "warning"
    assert "4.54.0 to 4.55.2" in f.message and "cu_seq_lens_q" in f.message
    assert "transformers<4.54.0" in f.fix and "transformers>=4.55.3" in f.fix and "**kwargs" in f.fix


def test_generate_frames_make_the_remote_forward_an_error():
    f = _tri038(GENERATE)
    assert f is not None and f.severity.value == "error"
    assert "generation/utils.py:3615" in f.message


@pytest.mark.parametrize(
    "text",
    [
        "transformers==4.57.1\n" + B002,  # a release that does not pass it: another cause
        "transformers==4.53.3\n" + B002,
        COLLATOR,  # the frames show another caller
        "TypeError: Qwen2ForCausalLM.forward() got an unexpected keyword argument 'cu_seq_lens_q'\n",  # transformers' own class
        "TypeError: LlavaQwenForCausalLM.forward() got an unexpected keyword argument 'cu_seqlen_q'\n",  # a typo of the key
    ],
)
def test_passed_keyword_quiet(text):
    assert _tri038(text) is None


def test_a_release_in_the_range_shown_makes_it_an_error():
    f = _tri038("transformers==4.54.1\n" + B002)
    assert f is not None and f.severity.value == "error"


# -- 3. an attribute another architecture has ----------------------------------------------------

B001 = (SET18 / "logs18b" / "logs" / "001.log").read_text()


def test_set18_b001_vlm_r1_internvl_line_on_qwen2_5_vl_is_a_tri038_warning():
    f = _tri038(B001)
    assert f is not None and f.severity.value == "warning"
    assert "vision_model" in f.message and "Qwen2_5_VLForConditionalGeneration" in f.message
    assert "grpo_trainer.py:470" in f.message and "_enable_gradient_checkpointing" in f.message
    assert "gradient_checkpointing=False" in f.fix


@pytest.mark.parametrize(
    "text",
    [
        B001.replace("vision_model", "vison_model"),  # a typo: no model has it
        B001.replace("vision_model", "visual"),  # the class has it (another cause)
        B001.replace("Qwen2_5_VLForConditionalGeneration", "MyProjectVLM"),  # not a transformers class
    ],
)
def test_foreign_attribute_quiet(text):
    assert _tri038(text) is None


# a replacement of LlamaAttention.forward (a flash-attention monkey patch of a project) under
# transformers 4.34.1, whose decoder layer passes padding_mask
PADDING_MASK = """Traceback (most recent call last):
  File "/home/u/proj/train.py", line 200, in <module>
    trainer.train()
  File "/opt/conda/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py", line 636, in forward
    hidden_states, self_attn_weights, present_key_value = self.self_attn(
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl
    return forward_call(*args, **kwargs)
TypeError: forward() got an unexpected keyword argument 'padding_mask'
"""


def test_a_patched_attention_forward_meeting_padding_mask_of_4_34_is_tri038():
    f = _tri038(PADDING_MASK)
    assert f is not None and f.severity.value == "error"
    assert "4.34.0 to 4.34.1" in f.message and "modeling_llama.py:636" in f.message
    assert "transformers<4.34.0" in f.fix and "transformers>=4.35.0" in f.fix
    assert _tri038("transformers==4.36.2\n" + PADDING_MASK) is None


def test_a_key_older_than_the_symbol_history_is_read_from_the_config_field_index():
    text = PEFT_LOADER.replace("exclude_modules", "use_dora")
    f = _tri038(text)
    assert f is not None and f.severity.value == "error" and "peft>=0.9.0" in f.fix
    assert "config-field index" in f.message


ADAPTER_NAMED = """model = PeftModel.from_pretrained(base, "adapters/run3")
TypeError: LoraConfig.__init__() got an unexpected keyword argument 'exclude_modules'
"""


def test_a_log_that_names_the_saved_adapter_without_frames_is_tri038():
    f = _tri038(ADAPTER_NAMED)
    assert f is not None and "frames are not shown" in f.message and "peft>=0.14.0" in f.fix
    # the message alone names no file: the drift answer (TRI009) stands
    alone = "TypeError: LoraConfig.__init__() got an unexpected keyword argument 'exclude_modules'\n"
    assert _tri038(alone) is None
    assert any(g.rule == "TRI009" for g in _all(alone))


def test_an_adapter_config_of_an_older_peft_is_tri038_older():
    f = _tri038(PEFT_LOADER.replace("exclude_modules", "enable_lora"))
    assert f is not None and f.severity.value == "error"
    assert "older peft" in f.message and "0.0.1–0.2.0" in f.message and "re-save the adapter" in f.fix
    # the user's own call with the old field stays the drift's answer
    assert _tri038(PEFT_USER_CALL.replace("exclude_modules", "enable_lora")) is None


# JIA-Lab-research/LongLoRA#37: the project's replacement of LlamaAttention.forward, named for
# itself, under transformers 4.34's decoder layer
LONGLORA_37 = """  File "/home/v100/lla2/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py", line 635, in forward
    hidden_states, self_attn_weights, present_key_value = self.self_attn(
  File "/home/v100/lla2/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl
    return forward_call(*args, **kwargs)
TypeError: forward_noflashattn() got an unexpected keyword argument 'padding_mask'
"""


def test_longlora_37_a_patch_named_for_itself_is_tri038():
    f = _tri038(LONGLORA_37)
    assert f is not None and "forward_noflashattn()" in f.message and "transformers<4.34.0" in f.fix


ROPE_LOAD = """Traceback (most recent call last):
  File "/home/u/run.py", line 5, in <module>
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3.1-8B-Instruct")
  File "/usr/lib/python3.10/site-packages/transformers/models/auto/auto_factory.py", line 523, in from_pretrained
    config, kwargs = AutoConfig.from_pretrained(
  File "/usr/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 958, in from_pretrained
    return config_class.from_dict(config_dict, **unused_kwargs)
  File "/usr/lib/python3.10/site-packages/transformers/configuration_utils.py", line 768, in from_dict
    config = cls(**config_dict)
  File "/usr/lib/python3.10/site-packages/transformers/models/llama/configuration_llama.py", line 161, in __init__
    self._rope_scaling_validation()
  File "/usr/lib/python3.10/site-packages/transformers/models/llama/configuration_llama.py", line 181, in _rope_scaling_validation
    raise ValueError(
ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'factor': 8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192, 'rope_type': 'llama3'}
"""


def test_a_config_json_with_rope_type_read_by_a_transformers_before_4_43_is_tri038():
    f = _tri038(ROPE_LOAD)
    assert f is not None and f.severity.value == "error"
    assert "config.json" in f.message and "transformers>=4.43.0" in f.fix
    # a rope_scaling of the old form with a wrong value: the refusal's answer (TRI012), not a file's form
    old = ROPE_LOAD.replace(
        "{'factor': 8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192, 'rope_type': 'llama3'}",
        "{'type': 'linear'}",
    )
    assert _tri038(old) is None


@pytest.mark.parametrize(
    "attr",
    [
        "peft_config",  # a PeftModel's (peft not applied), two speech families set it themselves
        "hf_device_map",  # from_pretrained's with a device_map, one family sets it
        "embed_tokens",  # the family's base model has it: a wrapper level, not an architecture
        "module",  # DistributedDataParallel's: no model has it
    ],
)
def test_foreign_attribute_quiet_for_a_non_architecture_attribute(attr):
    text = B001.replace("model.vision_model.gradient_checkpointing = True", f"model.{attr}.x = True").replace(
        "'vision_model'", f"'{attr}'"
    )
    assert _tri038(text) is None


# reach logs (public threads measured before any code was written from them, then kept here):
# SearchSavior/OpenArc#132 (an OpenVINO Gemma 4 export's tokenizer_config.json read by 4.52) and
# camenduru/hunyuan-video-jupyter#3 (HunyuanVideo's tokenizer.json under a tokenizers before 0.20)
@pytest.mark.parametrize(
    "name, file",
    [
        ("tri038-openarc-132.log", "tokenizer_config.json"),
        ("tri038-hunyuan-video-jupyter-3.log", "tokenizer.json"),
    ],
)
def test_reach_logs_stay_tri038_errors(name, file):
    f = next((g for g in findings(name) if g.rule == "TRI038"), None)
    assert f is not None and f.severity.value == "error" and file in f.message


def test_the_upgrade_past_padding_mask_stops_before_the_release_that_passes_cache_position():
    # a patch written for 4.33 meets cache_position= from 4.38.0 on (transformers#37030,
    # ColossalAI#5555): the upgrade alternative is bounded, and says why
    f = _tri038(PADDING_MASK)
    assert f is not None and "'transformers>=4.35.0,<4.38.0'" in f.fix and "cache_position" in f.fix
    assert _tri038("transformers==4.37.2\n" + PADDING_MASK) is None
    # the cu_seq_lens_q row names no later change: its upgrade stays open
    g = _tri038(
        "transformers==4.55.0\nTypeError: LlavaQwenForCausalLM.forward() got an unexpected keyword argument 'cu_seq_lens_q'\n"
    )
    assert g is not None and "'transformers>=4.55.3'" in g.fix


def test_an_upgrade_the_logs_other_package_caps_says_so():
    # trl 0.12.2 declares transformers<4.47.0: 'transformers>=5.0.0' would be refused beside it
    text = "trl==0.12.2\n" + TOKENIZER_LIST.replace("transformers==4.57.1", "transformers==4.46.3")
    f = _tri038(text)
    assert f is not None and "transformers>=5.0.0" in f.fix
    assert "trl 0.12.2 requires transformers<4.47.0" in f.fix and "refuses transformers 5.0.0" in f.fix
    # a release of it that admits the upgrade: nothing added
    g = _tri038("trl==0.24.0\n" + TOKENIZER_LIST)
    assert g is not None and "refuses" not in g.fix


# a script that loaded an adapter earlier (the log names PeftModel.from_pretrained) and then builds a
# LoraConfig of its own: the user's call, not a saved file
USER_CALL_AFTER_A_LOAD = """Loading reference policy: PeftModel.from_pretrained(base, "sft/adapter") done
Traceback (most recent call last):
  File "/home/u/train_dpo.py", line 41, in <module>
    peft_config = LoraConfig(r=16, lora_alpha=32, use_dora=True, target_modules="all-linear")
TypeError: LoraConfig.__init__() got an unexpected keyword argument 'use_dora'
"""


def test_the_users_own_line_passing_the_key_is_not_a_saved_file():
    assert _tri038(USER_CALL_AFTER_A_LOAD) is None
    assert any(g.rule == "TRI009" for g in _all(USER_CALL_AFTER_A_LOAD))
    # the same script handing a read file's keys to the class: the file stays the party
    spread = USER_CALL_AFTER_A_LOAD.replace(
        'LoraConfig(r=16, lora_alpha=32, use_dora=True, target_modules="all-linear")',
        'LoraConfig(**json.load(open("sft/adapter/adapter_config.json")))',
    )
    f = _tri038(spread)
    assert f is not None and "peft>=0.9.0" in f.fix


# andyzoujm/representation-engineering#56: a Llama class of the project written for transformers
# 4.36, whose LlamaModel had _use_flash_attention_2 (gone in 4.38; other families kept it): an older
# transformers' line, not another architecture's (the index holds the releases from 4.33.3 on)
REPE_56 = """Traceback (most recent call last):
  File "/home/u/representation-engineering/examples/honesty/tqa.py", line 88, in <module>
    model_baseline_acc = get_tqa_accuracy(model, questions, answers, labels, tokenizer, batch_size=batch_size)
  File "/home/u/representation-engineering/repe/rep_control_contrast_vec.py", line 210, in forward
    if self.model._use_flash_attention_2:
  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1729, in __getattr__
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
AttributeError: 'LlamaModel' object has no attribute '_use_flash_attention_2'
"""


def test_an_attribute_the_same_class_had_before_4_46_is_not_another_architectures():
    assert _tri038(REPE_56) is None


def test_the_rope_row_names_the_release_that_reads_llama_3_1_whole_and_no_resave():
    # 4.43.0's LlamaRotaryEmbedding evaluates rope_scaling["type"] (KeyError on Llama 3.1's
    # config.json); no release before 4.43 has the llama3 kind, so the installed one cannot re-save it
    f = _tri038(ROPE_LOAD)
    assert f is not None and "'transformers>=4.43.1'" in f.fix and "4.43.0 itself fails" in f.fix
    assert "re-save" not in f.fix and "model revision saved for the installed transformers" in f.fix
