"""Every shape of a failing exception line (issue 36, item 4): pytest's report (``E   Exc: msg``
lines and ``path.py:12: in f`` location frames), an exception quoted inside a line of prose that
is not the log's last, or a traceback flattened onto one line. Each log is synthetic, in the shape
of a real paste (set 24: a SkyRL GPU CI conftest import, vLLM's swap-space abort, a DeepSpeed PDSH
launcher KeyError, a FlashAttention dtype refusal quoted in an issue). A warning that names an
exception, or prose that names an error type without a message, stays quiet."""

from __future__ import annotations

import pytest

from envdoctor.triage.traceback import failure
from tests.triage.helpers import findings, scan_bytes

SP = "../../.cache/uv/builds-v0/.tmp27LTUz/lib/python3.12/site-packages"

PYTEST = f"""$ bash ci/gpu_ci_run.sh
ImportError while loading conftest '/home/u/proj/tests/gpu/conftest.py'.
tests/gpu/conftest.py:3: in <module>
    from tests.gpu.utils import ray_init_for_tests
{SP}/accelerate/utils/imports.py:42: in __getattr__
    raise ModuleNotFoundError(
E   ModuleNotFoundError: Could not import module 'Accelerator'. Are this object's requirements defined?
"""

PYTEST_BARE = f"""tests/gpu/test_engine.py:218:
{SP}/ray/_private/worker.py:2961: in get
    raise value.as_instanceof_cause()
E                         File "{SP}/vllm/v1/engine/core_client.py", line 1091, in _ensure_task
E                           assert self.stats_address is not None
E                       AssertionError
"""


def _tri003(text: str) -> list[str]:
    return [f.message for f in findings(scan_bytes(text)) if f.rule == "TRI003"]


def test_pytest_report_line_is_the_failure_with_its_frames() -> None:
    found = findings(scan_bytes(PYTEST))
    assert found, "pytest's E line is a failing line"
    assert any("Could not import module 'Accelerator'" in f.message for f in found)
    tb = failure(PYTEST.splitlines()[:-1], PYTEST.splitlines()[-1], 7)  # pytest's location lines are frames
    assert tb is not None and tb.exc_type == "ModuleNotFoundError"
    assert [f.package for f in tb.frames] == [None, "accelerate"]
    assert tb.frames[-1].function == "__getattr__" and tb.frames[-1].line == 42


def test_pytest_bare_exception_name_with_prefixed_frames() -> None:
    found = _tri003(PYTEST_BARE)
    assert found and "AssertionError" in found[0] and "vllm" in found[0]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (  # quoted in prose, the log's last line
            "unsloth 2024.8, FA2 = True\nwith use_dora=True\nit always errors out "
            '"RuntimeError: FlashAttention only support fp16 and bf16 data type".\n',
            "FlashAttention only support fp16 and bf16",
        ),
        (  # typographic quotes and markdown emphasis, not the last line
            "Hi, when running the recipe I got\n\u201c*ValueError: You are attempting to perform "
            "batched generation with\npadding_side='right'*\u201d\nAny idea?\n",
            "batched generation",
        ),
        (  # a quoted line at the head of a line of prose
            'I hit\n"IndexError: tuple index out of range" from\nset_lora during the sync\n',
            "tuple index out of range",
        ),
        (  # after "error:", with prose after it
            "deepspeed --hostfile hosts --ssh_port 2222 train.py\nget error: KeyError: "
            "'PDSH_SSH_ARGS_APPEND' in\nmultinode_runner.py\nthanks\n",
            "PDSH_SSH_ARGS_APPEND",
        ),
        (  # a traceback flattened onto one line
            "log:\nin _swap_out raise RuntimeError( RuntimeError: Aborted due to the lack of CPU "
            "swap space. Please increase the swap space to avoid this error\n",
            "lack of CPU swap space",
        ),
    ],
)
def test_quoted_exception_is_named(text: str, shown: str) -> None:
    """Named as the first exception (TRI003), or by the catalogue entry whose symptom it is
    (flash-attn's fp32 refusal, vLLM's CPU swap space: TRI011 since session 24)."""
    found = _tri003(text) or [f.message for f in findings(scan_bytes(text)) if f.rule == "TRI011"]
    assert found and shown in found[0]


@pytest.mark.parametrize(
    "text",
    [
        # a warning that names an exception
        "WARNING 05-01 10:00:00 [x.py:1] Failed to import flash_attn: ImportError: libcudart.so\n"
        "step 10 loss 0.3\n",
        "warning: could not load the plugin (error: KeyError: 'foo' in registry)\ntraining done\n",
        # prose that names an error type without a message
        'I used to get a "ValueError" here but it is gone now\ntraining done\n',
        "Does anyone know why a RuntimeError happens?\n",
    ],
)
def test_quiet_without_a_quoted_failure(text: str) -> None:
    assert _tri003(text) == []


def test_an_exception_on_its_own_line_comes_before_a_quoted_one() -> None:
    text = (
        "I first saw \"KeyError: 'a'\" in the logs\nTraceback (most recent call last):\n"
        '  File "/x/site-packages/trl/a.py", line 3, in f\n    g()\nValueError: the real one\n'
    )
    found = _tri003(text)
    assert found and "the real one" in found[0]
