"""A constructor's binding error that names no class (Python < 3.10: ``__init__() got an
unexpected keyword argument 'k'``) is the class its call's line names, behind decorator wrapper
frames too (``callsite.qualify``): the symbol history's removed-keyword answer (TRI009) applies as
to Python 3.10's ``X.__init__()``, and the argument's new home in X's config class is named.
docs/validation/heldout-2026-11-29/logs/004.log is ``DPOTrainer(beta=…)`` on a newer TRL."""

from __future__ import annotations

import pytest

from envdoctor.findings import Severity
from envdoctor.triage.callsite import call_site, called_class
from envdoctor.triage.traceback import failure
from tests.triage.helpers import findings, scan_bytes

SP = "/usr/lib/python3.8/site-packages"
#: decorator wrappers between the call and the constructor: transformers' deprecate_kwarg,
#: huggingface_hub's _deprecate_arguments, a functools.wraps wrapper
WRAPPERS = [
    f'  File "{SP}/transformers/utils/deprecation.py", line 165, in wrapped_func\n'
    "    return func(*args, **kwargs)\n",
    f'  File "{SP}/huggingface_hub/utils/_deprecation.py", line 101, in inner_f\n'
    "    return f(*args, **kwargs)\n",
    '  File "/usr/lib/python3.8/functools.py", line 12, in wrapper\n    return init(self, *args, **kwargs)\n',
]


def _log(call: str, message: str, between: str = "") -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/u/dpo_train.py", line 49, in <module>\n'
        f"    {call}\n{between}TypeError: {message}\n"
    )


@pytest.mark.parametrize("between", ["", *WRAPPERS])
def test_an_unqualified_removed_keyword_is_the_called_class_with_its_config_class(between):
    """logs/004's shape: DPOTrainer(beta=…) where TRL moved beta to DPOConfig; through a wrapper
    the caller is still the user's code, not the wrapper's package."""
    (f,) = findings(
        scan_bytes(
            _log("dpo_trainer = DPOTrainer(", "__init__() got an unexpected keyword argument 'beta'", between)
        )
    )
    assert (f.rule, f.severity) == ("TRI009", Severity.ERROR)
    assert "your code calls DPOTrainer()" in f.message and "removed in trl 0.13.0" in f.message
    assert "dpo_train.py:49" in f.message and "transformers calls" not in f.message
    assert "move beta= from DPOTrainer(…) to DPOConfig(beta=…)" in f.fix and "trl<0.13.0" in f.fix


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "trainer = DPOTrainer(model, ref, args=args, tokenizer=tok)",
            "__init__() got an unexpected keyword argument 'tokenizer'",
        ),
        (
            "trainer = trl.SFTTrainer(model, args=args, max_seq_length=512)",
            "__init__() got an unexpected keyword argument 'max_seq_length'",
        ),
        (
            "trainer = GRPOTrainer(model, args=cfg)",
            "__init__() missing 1 required positional argument: 'reward_funcs'",
        ),
        (
            "trainer = PPOTrainer(config, model, ref_model, tok)",
            "__init__() takes from 1 to 3 positional arguments but 5 were given",
        ),
    ],
)
def test_the_unqualified_message_gets_the_qualified_ones_answer(call, message):
    """Python 3.8's message and 3.10's for the same call: the same rules and severities."""
    cls = call.split("=", 1)[1].split("(")[0].strip().rsplit(".", 1)[-1]
    old = findings(scan_bytes(_log(call, message)))
    new = findings(scan_bytes(_log(call, f"{cls}.{message}")))
    assert [(f.rule, f.severity) for f in old] == [(f.rule, f.severity) for f in new]
    lines = _log(call, message).splitlines()
    tb = failure(lines[:-1], lines[-1])
    assert tb is not None and tb.message == f"{cls}.{message}" and tb.call_site == 0


def test_a_qualified_message_through_a_wrapper_is_the_users_call():
    """Python 3.10's own ``DPOTrainer.__init__()`` through transformers' decorator: the call's site
    is the user's line, not the wrapper's package (before: "transformers calls DPOTrainer()")."""
    text = _log(
        "dpo_trainer = DPOTrainer(",
        "DPOTrainer.__init__() got an unexpected keyword argument 'beta'",
        WRAPPERS[0],
    )
    (f,) = findings(scan_bytes(text))
    assert f.rule == "TRI009" and "your code calls DPOTrainer()" in f.message


@pytest.mark.parametrize(
    ("call", "between"),
    [
        ("super().__init__(*args, **kwargs)", ""),  # the parent's constructor: which class is not on the line
        ("trainer = make_trainer(cfg)", ""),  # no class called
        ("x = Outer(Inner(1), Other(2))", ""),  # several classes and no keyword to tell which
        ("trainer = MyDPOTrainer(", WRAPPERS[0]),  # the user's own class: no history has it
    ],
)
def test_no_class_is_named_where_the_line_does_not_tell_one(call, between):
    text = _log(call, "__init__() got an unexpected keyword argument 'beta'", between)
    fs = findings(scan_bytes(text))
    assert [f.rule for f in fs] == ["TRI003"]
    assert "__init__() got" in fs[0].message


def test_no_call_site_without_the_source_line():
    lines = _log("", "__init__() got an unexpected keyword argument 'beta'").splitlines()
    lines = [x for x in lines if x.strip()]
    tb = failure(lines[:-1], lines[-1])
    assert tb is not None and call_site(tb) is None and tb.message.startswith("__init__()")


@pytest.mark.parametrize(
    ("code", "kwarg", "cls"),
    [
        ("trainer = DPOTrainer(", "beta", "DPOTrainer"),
        ("t = trl.DPOTrainer(model=AutoModel.from_pretrained('x'), beta=0.1)", "beta", "DPOTrainer"),
        ("t = DPOTrainer(model=M(beta=1), args=a)", "beta", "M"),  # the innermost call that passes it
        ("t = DPOTrainer(model=M(1), args=A(2))", "beta", None),
        ("t = DPOTrainer(model=M(1), args=A(2))", None, None),
        ("return func(*args, **kwargs)", None, None),
    ],
)
def test_the_class_a_line_calls(code, kwarg, cls):
    assert called_class(code, kwarg) == cls


def test_msgspecs_unexpected_keyword_is_read_as_the_called_class_constructors():
    # vLLM's SamplingParams is a msgspec Struct: "Unexpected keyword argument 'k'" names no callee
    lines = [
        "Traceback (most recent call last):",
        '  File "/home/k/envs/vllm/lib/python3.10/asyncio/base_events.py", line 641, in run_until_complete',
        "    return future.result()",
        '  File "/home/k/demo/vllm_cli_demo.py", line 77, in vllm_gen',
        "    sampling_params = SamplingParams(**params_dict)",
    ]
    tb = failure(lines, "TypeError: Unexpected keyword argument 'use_beam_search'")
    assert tb is not None
    assert tb.message == "SamplingParams.__init__() got an unexpected keyword argument 'use_beam_search'"
    assert tb.frames[0].package is None  # the env named vllm holds Python's asyncio, not vLLM
