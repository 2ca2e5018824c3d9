"""A check that found no device is the environment the process saw, not a configuration it
refuses (issue 36): TRI030 says what the process saw and the checks (CUDA_VISIBLE_DEVICES, the
driver, the torch build), a warning unless the log shows why. TRI012 is an error only where the
message names what it refuses (an option, a value it demands, its own fix, or the thing it refuses
in its words); one that names nothing is a warning.
docs/validation/heldout-2026-11-29/logs3/009.log (accelerate's "no available devices found",
the cause a transformers release's device detection) was a wrong TRI012 error."""

from __future__ import annotations

import pytest

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes

SP = "/usr/local/lib/python3.10/site-packages"
NO_DEVICES = (
    "RuntimeError: There are currently no available devices found, must be one of 'XPU', 'CUDA', or 'NPU'.\n"
)


def _one(text: str):
    fs = findings(scan_bytes(text))
    assert len(fs) == 1, [(f.rule, f.message) for f in fs]
    return fs[0]


@pytest.mark.parametrize(
    "text",
    [
        NO_DEVICES,
        "RuntimeError: No GPU found. A GPU is needed for quantization.\n",
        "RuntimeError: CUDA is not available\n",
        f"""Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    model = load()
  File "{SP}/unsloth/models/loader.py", line 80, in load
    raise NotImplementedError("Unsloth: No NVIDIA GPU found? Unsloth currently only supports GPUs!")
NotImplementedError: Unsloth: No NVIDIA GPU found? Unsloth currently only supports GPUs!
""",
    ],
)
def test_no_device_found_is_what_the_process_saw_not_a_refusal(text):
    f = _one(text)
    assert f.rule == "TRI030"
    assert "CUDA_VISIBLE_DEVICES" in f.fix and "nvidia-smi" in f.fix and "torch.cuda.is_available()" in f.fix
    assert "refuses this configuration" not in f.fix


def test_no_device_is_a_warning_that_names_the_check_placed_by_its_message():
    f = _one(NO_DEVICES)
    assert f.severity == Severity.WARNING
    assert "no device to run on" in f.message and "accelerate" in f.message.lower()


@pytest.mark.parametrize(
    ("shown", "why"),
    [
        ('+ export CUDA_VISIBLE_DEVICES=""\n', "visible devices set to none"),
        ("CUDA_VISIBLE_DEVICES=-1 python train.py\n", "visible devices set to none"),
        ("torch==2.3.1+cpu\n", "CPU-only build of torch"),
        (
            "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU\n",
            "no usable NVIDIA driver",
        ),
    ],
)
def test_no_device_is_an_error_where_the_log_shows_why(shown, why):
    f = _one(shown + NO_DEVICES)
    assert (f.rule, f.severity) == ("TRI030", Severity.ERROR)
    assert why in f.message


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.\n",
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu!\n",
    ],
)
def test_other_device_messages_are_not_no_device(text):
    assert all(
        not (f.rule == "TRI030" and f.evidence.get("gpu_visible") == "none-seen")
        for f in findings(scan_bytes(text))
    )


def _guard(message: str) -> str:
    return f"""Traceback (most recent call last):
  File "/home/u/train.py", line 9, in <module>
    trainer = Trainer(model)
  File "{SP}/deepspeed/runtime/engine.py", line 300, in __init__
    raise ValueError("{message}")
ValueError: {message}
"""


@pytest.mark.parametrize(
    ("message", "severity", "says"),
    [
        # an option named: an error, the option in the fix
        ("zero_stage 3 is not supported with offload_param on this optimizer.", Severity.ERROR, "zero_stage"),
        # what it refuses in its own words: an error that names it
        (
            "DeepSpeed does not work on multi node setups without a hostfile.",
            Severity.ERROR,
            "multi node setups",
        ),
        # its own fix: an error with that fix
        (
            "The engine was not initialised properly, please use deepspeed.initialize() first.",
            Severity.ERROR,
            "please use",
        ),
        # nothing named, no fix: likely, the check's condition tells
        ("This configuration is invalid and must be changed.", Severity.WARNING, "its condition"),
    ],
)
def test_a_refusal_is_an_error_only_where_it_names_what_it_refuses(message, severity, says):
    f = _one(_guard(message))
    assert (f.rule, f.severity) == ("TRI012", severity)
    assert says in f.fix
