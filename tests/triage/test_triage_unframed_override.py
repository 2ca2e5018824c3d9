"""A method override written for an older release of the package that calls it, told from the
message alone (``boundary._unframed_override``), and exception lines pasted with typographic
quotes (``traceback._body``)."""

from __future__ import annotations

import pytest

from envdoctor.knowledge.symbol_history import param_added
from envdoctor.triage.traceback import parse
from tests.triage.helpers import findings, scan_bytes

# verl's ExternalZeroMQDistributedExecutor on vLLM >= 0.11 (vllm-project/vllm#24219), as pasted
VERL = "ExternalZeroMQDistributedExecutor.collective_rpc() got an unexpected keyword argument 'non_block'"


def _errors(log: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f.severity.value == "error"]


def test_param_added_is_when_every_class_that_added_it_had_it():
    """MultiprocExecutor took non_block from vLLM 0.9.0, UniProcExecutor from 0.11.0; the abstract
    Executor came with it in 0.11.0 (born with it: no say)."""
    assert param_added("vllm", "collective_rpc", "non_block") == "0.11.0"
    assert param_added("vllm", "collective_rpc", "no_such_keyword") is None


@pytest.mark.parametrize("log", [f"TypeError: {VERL}\n", f"{VERL}\n", f"[rank0]: TypeError: {VERL}\n"])
def test_an_override_without_the_keyword_the_package_passes_is_drift_with_the_release(log):
    found = _errors(log)
    assert found and found[0].rule == "TRI009"
    assert "overrides vllm's collective_rpc() in ExternalZeroMQDistributedExecutor" in found[0].message
    assert "0.11.0" in found[0].message
    assert "non_block=None" in found[0].fix and "pip install 'vllm<0.11.0'" in found[0].fix


@pytest.mark.parametrize(
    "log",
    [
        # a keyword no release of vLLM passes to collective_rpc
        VERL.replace("'non_block'", "'banana'") + "\n",
        # a method several packages define (forward, compute_loss): whose call it was is not told
        "TypeError: MyModel.forward() got an unexpected keyword argument 'num_items_in_batch_x'\n",
        # a dunder: every class has one
        "TypeError: MyCollator.__init__() got an unexpected keyword argument 'max_prompt_length'\n",
    ],
)
def test_no_override_claim_without_one_package_that_added_the_keyword(log):
    assert not any("overrides vllm's" in f.message for f in findings(scan_bytes(log)))


def test_the_users_own_call_shown_in_a_frame_is_not_the_packages():
    """A frame of the user's code made the call: the user passed the keyword, not vLLM."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/run.py", line 12, in <module>\n'
        "    ex.collective_rpc('ping', non_block=True)\n"
        f"TypeError: {VERL}\n"
    )
    assert not any("overrides vllm's" in f.message for f in findings(scan_bytes(log)))


def test_typographic_quotes_read_as_pythons_own():
    """A blog's or a word processor's paste (heldout-2026-11-29d logs12d/009): the same answer as the
    message Python printed."""
    curly = (
        "AttributeError: \u2018TrainingArguments\u2019 object has no attribute "
        "\u2018model_init_kwargs\u2019\n"
    )
    plain = "AttributeError: 'TrainingArguments' object has no attribute 'model_init_kwargs'\n"
    a, b = _errors(curly), _errors(plain)
    assert a and b and a[0].rule == b[0].rule == "TRI009"
    assert "model_init_kwargs" in a[0].message and "TrainingArguments" in a[0].message


def test_a_dunder_whose_underscores_markdown_dropped_reads_as_pythons_own():
    """An issue rendered from markdown loses ``__`` around ``init`` (set 16, not held out): the
    message Python printed was ``….__init__() got an unexpected keyword argument``."""
    lost = (
        "TypeError: Seq2SeqTrainingArguments.init() got an unexpected keyword argument "
        "\u2018evaluation_strategy\u2019\n"
    )
    (f,) = _errors(lost)
    assert f.rule == "TRI009" and "eval_strategy" in f.fix
    quiet = "TypeError: init() got an unexpected keyword argument 'x'\n"  # no class: not rewritten
    assert all("__init__" not in t.message for t in parse(quiet.splitlines()))


def test_a_frame_pasted_with_typographic_quotes_names_its_package():
    tbs = parse(
        [
            "Traceback (most recent call last):",
            "  File \u201c/v/site-packages/trl/trainer/grpo_trainer.py\u201d, line 412, in __init__",
            "ValueError: x",
        ]
    )
    assert tbs and tbs[-1].frames and tbs[-1].frames[-1].package == "trl"


def test_an_override_python_names_without_its_class_is_the_subclass_not_an_old_callee() -> None:
    # QwenLM/Qwen3-Coder#394 (Python 3.9: no class in the message): transformers 4.47's own frame
    # calls self.log(logs, start_time) on the user's CustomTrainer.log(self, logs); the installed
    # transformers makes the call, so "pip install 'transformers>=4.47.1'" would be backwards
    text = (
        "[rank6]: Traceback (most recent call last):\n"
        '[rank6]:   File "Qwen2.5-Coder/finetuning/sft/train.py", line 239, in train\n'
        "[rank6]:     trainer.train()\n"
        '[rank6]:   File "envs/qwen/lib/python3.9/site-packages/transformers/trainer.py", line 2164, '
        "in train\n"
        "[rank6]:     return inner_training_loop(\n"
        '[rank6]:   File "envs/qwen/lib/python3.9/site-packages/transformers/trainer.py", line 3045, in '
        "_maybe_log_save_evaluate\n"
        "[rank6]:     self.log(logs, start_time)\n"
        "[rank6]: TypeError: log() takes 2 positional arguments but 3 were given\n"
    )
    (f,) = [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]
    assert "overrides transformers's log()" in f.message
    assert "to the override" in f.fix and "transformers>=" not in f.fix
