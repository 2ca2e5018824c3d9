"""Triage names the data rules' own ids (DAT002, DAT003, DAT007, DAT008) for the failures the data
check names before the run: one id, one title, one fix for the same failure."""

from __future__ import annotations

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes


def _found(text: str):
    return findings(scan_bytes(text))


def _one(text: str):
    found = _found(text)
    assert len(found) == 1, [(f.rule, f.message) for f in found]
    return found[0]


SERVER = (
    'CMD ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/app/models/base-7b"]\n\n'
    "400 As of transformers v4.44, default chat template is no longer allowed, so you must provide a "
    "chat template if the tokenizer does not define one. None\n"
)


def test_a_tokenizer_without_a_chat_template_is_dat003_whoever_refused_it():
    f = _one(SERVER)  # vLLM's server answered the chat request: no "Error" on the line
    assert f.rule == "DAT003" and f.severity == Severity.ERROR
    assert "/v1/completions" in f.fix  # vLLM's own server (a Dockerfile's exec form started it)
    trl = (
        '  File "/env/lib/python3.11/site-packages/trl/data_utils.py", line 210, in '
        "maybe_apply_chat_template\n"
        "    return apply_chat_template(example, tokenizer, tools)\n"
        "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no "
        "template argument was passed! For information about writing templates and setting the "
        "tokenizer.chat_template attribute, please see the documentation at "
        "https://huggingface.co/docs/transformers/main/en/chat_templating\n"
    )
    f = _one(trl)
    assert f.rule == "DAT003"
    from envdoctor.checks.data import CHAT_TEMPLATE_FIX

    assert f.fix == CHAT_TEMPLATE_FIX  # the check's and the probe's fix
    processor = (
        "ValueError: Cannot use apply_chat_template because this processor does not have a chat template.\n"
    )
    assert _one(processor).rule == "DAT003"


def test_a_log_that_only_mentions_chat_templates_is_quiet():
    healthy = (
        "INFO 05-02 10:00:01 serving_chat.py:81] Using supplied chat template:\n"
        "INFO 05-02 10:00:01 api_server.py:300] the default chat template of the model is used\n"
        "{'loss': 0.41, 'grad_norm': 1.2, 'learning_rate': 1e-06, 'epoch': 0.1}\n"
    )
    assert _found(healthy) == []


def test_the_catalogue_entry_speaks_with_the_data_rules_title_and_fix():
    from envdoctor.checks.data import CHAT_TEMPLATE_FIX
    from envdoctor.knowledge import known_failures
    from envdoctor.rule_docs import rule_docs

    entry = next(e for e in known_failures() if e.id == "trl-grpo-chat-prompts-without-chat-template")
    assert entry.rule == "DAT003"
    assert entry.title == rule_docs()["DAT003"].title
    assert entry.fix == CHAT_TEMPLATE_FIX


def test_the_trainer_column_table_holds_each_trainers_columns_at_tags():
    from envdoctor.triage.trainercols import _table

    table = {t["trainer"]: t for t in _table()}
    assert {"SFTTrainer", "DPOTrainer", "GRPOTrainer", "KTOTrainer"} <= set(table)
    assert table["GRPOTrainer"]["releases"][0]["columns"] == ["prompt"]
    assert {"prompt", "chosen", "rejected"} <= set(table["DPOTrainer"]["releases"][0]["columns"])
    assert "label" in table["KTOTrainer"]["releases"][0]["columns"]
    for t in table.values():
        assert t["references"] and all("/blob/v" in r for r in t["references"])
    import pytest

    from envdoctor.knowledge.schema import KnowledgeError, validate

    base = {"schema": "envdoctor.knowledge/1"}
    bad = {
        "file": "x.py",
        "functions": ["f"],
        "references": ["u"],
        "releases": [{"trl": "0.12", "columns": []}],
    }
    with pytest.raises(KnowledgeError, match="specifier"):
        validate("trainer_columns.yaml", {**base, "trainers": [bad]})


def test_a_vllm_server_started_by_a_dockerfiles_exec_form_is_the_server_program():
    from envdoctor.triage.runkind import _VLLM_SERVER

    assert _VLLM_SERVER.search(
        'CMD ["python3", "-m", "vllm.entrypoints.openai.api_server", "--port", "3000"]'
    )
    assert _VLLM_SERVER.search('ENTRYPOINT ["vllm", "serve", "Qwen/Qwen2.5-7B"]')
    assert not _VLLM_SERVER.search('CMD ["python3", "train.py"]')


REWARD_NONE = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/train.py", line 90, in <module>\n'
    "    trainer.train()\n"
    '  File "/env/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1200, in '
    "_calculate_rewards\n"
    "    output_reward_func = [reward if reward is not None else torch.nan "
    "for reward in output_reward_func]\n"
    "TypeError: 'NoneType' object is not iterable\n"
)


def test_what_a_reward_function_returned_is_read_at_trls_own_line():
    f = _one(REWARD_NONE)
    assert f.rule == "DAT010" and f.severity == Severity.ERROR and "returned None" in f.message
    from envdoctor.checks.data import reward_length_fix, reward_return_fix

    assert f.fix == reward_return_fix("each reward function")
    wrong = REWARD_NONE.replace(
        "output_reward_func = [reward if reward is not None else torch.nan for reward in output_reward_func]",
        "rewards_per_func[:, i] = torch.tensor(output_reward_func, dtype=torch.float32, device=device)",
    ).replace(
        "TypeError: 'NoneType' object is not iterable",
        "RuntimeError: The expanded size of the tensor (8) must match the existing size (4) at "
        "non-singleton dimension 0.  Target sizes: [8].  Tensor sizes: [4]",
    )
    f = _one(wrong)
    assert f.rule == "DAT013" and f.fix == reward_length_fix("each reward function")


def test_the_same_messages_elsewhere_say_nothing_of_a_reward():
    own = REWARD_NONE.replace(
        "/env/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", "/home/u/mine.py"
    )
    own = own.replace("_calculate_rewards", "step").replace(
        "output_reward_func = [reward if reward is not None else torch.nan for reward in output_reward_func]",
        "x = [a for a in things]",
    )
    assert all(f.rule not in ("DAT010", "DAT013") for f in _found(own))
    bare = "TypeError: 'NoneType' object is not iterable\n"  # no frame: not proved
    assert all(f.rule not in ("DAT010", "DAT013") for f in _found(bare))
