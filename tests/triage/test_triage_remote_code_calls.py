# ruff: noqa: E501 - log lines are quoted as programs print them
"""A model's code calling transformers with an argument it does not take (remotecode.stale_call,
TRI038): set 23's e003 (GLM-4's remote code on transformers 4.44, the bare message) and the same
call from frames under transformers_modules/; quiet where another package of the stack calls, for a
public method of the user's own call, and for a class transformers does not have."""

from __future__ import annotations

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes

BARE = (
    "微调报错 TypeError: GenerationMixin._extract_past_from_model_output() got an unexpected keyword "
    "argument 'standardize_cache_format'\n"
)

REMOTE = """\
Traceback (most recent call last):
  File "/home/u/finetune.py", line 40, in <module>
    trainer.train()
  File "/home/u/.cache/huggingface/modules/transformers_modules/glm-4-9b-chat/modeling_chatglm.py", line 1011, in _update_model_kwargs_for_generation
    cache_name, cache = {call}
TypeError: {message}
"""
EXTRACT = "self._extract_past_from_model_output(outputs, standardize_cache_format=standardize_cache_format)"
EXTRACT_MSG = "GenerationMixin._extract_past_from_model_output() got an unexpected keyword argument 'standardize_cache_format'"


def _tri038(text: str):
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI038"]


def test_a_private_transformers_method_with_a_keyword_it_lacks_is_stale_model_code():
    (f,) = _tri038(BARE)
    assert f.severity == Severity.ERROR
    assert (
        "GenerationMixin._extract_past_from_model_output" in f.message
        and "standardize_cache_format" in f.message
    )
    assert "transformers_version in the model's config.json" in f.fix


def test_remote_code_frames_name_the_model_repositorys_code():
    (f,) = _tri038(REMOTE.format(call=EXTRACT, message=EXTRACT_MSG))
    assert f.severity == Severity.ERROR and "remote code" in f.message and "modeling_chatglm.py" in f.message


def test_where_the_symbol_history_knows_the_parameter_its_release_is_named_first():
    text = REMOTE.format(
        call="past.crop(max_length=n)", message="Cache.crop() got an unexpected keyword argument 'max_length'"
    )
    assert not _tri038(text)  # structural.drift answers first, from the history
    (f,) = [f for f in findings(scan_bytes(text)) if f.severity == Severity.ERROR]
    assert "transformers<5.15.0" in f.fix


def test_another_package_calling_is_not_a_models_code():
    text = REMOTE.format(call=EXTRACT, message=EXTRACT_MSG).replace(
        "/home/u/.cache/huggingface/modules/transformers_modules/glm-4-9b-chat/modeling_chatglm.py",
        "/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py",
    )
    assert not _tri038(text)


def test_a_public_method_the_users_code_calls_is_not_this_answer():
    text = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    trainer = Trainer(model=model, args=args, tokenizer=tok)
TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'
"""
    assert not _tri038(text)


def test_a_class_transformers_does_not_have_stays_quiet():
    assert not _tri038(BARE.replace("GenerationMixin", "MyOwnMixin"))
    assert not _tri038(BARE.replace("_extract_past_from_model_output", "_my_own_helper"))
