"""A catalogue entry about a trainer met in another program (``program_fixes``): the chat-template
refusal of GRPOTrainer, returned by vLLM's own OpenAI server, is fixed on the server's command line."""

from __future__ import annotations

from envdoctor.triage.runkind import VLLM_SERVER, program
from tests.triage.helpers import findings, scan_bytes

MESSAGE = (
    "Cannot use chat template functions because tokenizer.chat_template is not set and no template "
    "argument was passed! For information about writing templates and setting the "
    "tokenizer.chat_template attribute, please see the documentation at "
    "https://huggingface.co/docs/transformers/main/en/chat_templating"
)
#: held-out set 19, logs19b/001: Baichuan2-7B-Chat served by vLLM's API server (settled: a chat
#: template for the server, its --chat-template flag)
SERVER_LOG = (
    "python3 -m vllm.entrypoints.openai.api_server --host 0.0.0.0   --model  /model/Baichuan2-7B-Chat "
    "--trust-remote-code    --gpu-memory-utilization 0.80\n"
    "{\n"
    '    "object": "error",\n'
    f'    "message": "{MESSAGE}",\n'
    '    "type": "BadRequestError",\n'
    '    "param": null,\n'
    '    "code": 400\n'
    "}\n"
)
GRPO_LOG = (
    "Traceback (most recent call last):\n"
    '  File "/work/train_grpo.py", line 60, in <module>\n'
    "    trainer.train()\n"
    '  File "/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1010, in _prepare_inputs\n'
    '  File "/venv/lib/python3.11/site-packages/trl/data_utils.py", line 120, in maybe_apply_chat_template\n'
    '  File "/venv/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 1617, in '
    "apply_chat_template\n"
    f"ValueError: {MESSAGE}\n"
)
ENTRY = "trl-grpo-chat-prompts-without-chat-template"


def _entry(text: str):
    (f,) = [f for f in findings(scan_bytes(text)) if f.evidence.get("known_failure") == ENTRY]
    return f


def test_the_refusal_from_vllms_own_server_is_fixed_on_the_servers_command_line():
    f = _entry(SERVER_LOG)
    assert f.fix.startswith("start the server with a chat template (--chat-template")
    assert "the log runs vLLM's own OpenAI server" in f.message
    assert "pass processing_class=tokenizer" not in f.fix
    assert f.rule == "DAT003"  # the data rule's own id, whichever program refused


def test_the_refusal_in_grpo_trainer_keeps_the_trainers_fix():
    from envdoctor.checks.data import CHAT_TEMPLATE_FIX

    f = _entry(GRPO_LOG)
    assert f.fix == CHAT_TEMPLATE_FIX and "--chat-template" not in f.fix
    assert "vLLM's own OpenAI server" not in f.message


def test_a_server_log_that_shows_a_trainer_is_not_the_servers():
    assert program(scan_log_text("vllm serve Qwen/Qwen2.5-7B\n")) == VLLM_SERVER
    assert program(scan_log_text("vllm serve Qwen/Qwen2.5-7B\nGRPOTrainer: step 1\n")) is None
    assert program(scan_log_text("trl vllm-serve --model Qwen/Qwen2.5-7B\n")) is None


def scan_log_text(text: str):
    from envdoctor.triage.draft import Log

    return Log({}, {}, None, text.count("\n"), head=text.encode())
