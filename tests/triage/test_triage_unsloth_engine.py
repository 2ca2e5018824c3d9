"""Unsloth's GRPOTrainer reading the vLLM engine only fast_inference=True builds."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes

ENTRY = "unsloth-use-vllm-without-fast-inference"
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/content/unsloth_compiled_cache/UnslothGRPOTrainer.py", line 1210, in __init__\n'
    "    self.llm = model.vllm_engine; self._last_loaded_step = 0\n"
    '  File "/usr/local/lib/python3.11/dist-packages/peft/peft_model.py", line 824, in __getattr__\n'
    "    return super().__getattr__(name)\n"
    '  File "/usr/local/lib/python3.11/dist-packages/torch/nn/modules/module.py", line 1931, in __getattr__\n'
    "    raise AttributeError(\n"
    "AttributeError: 'PeftModelForCausalLM' object has no attribute 'vllm_engine'\n"
)


@pytest.mark.parametrize(
    "log",
    [TRACE, "AttributeError: 'PeftModelForCausalLM' object has no attribute 'load_lora'\n"],
)
def test_the_missing_engine_is_fast_inference_with_its_fix(log):
    found = findings(scan_bytes(log))
    assert found and found[0].rule == "TRI011" and found[0].severity.value == "error"
    assert ENTRY in found[0].message and "fast_inference=True" in found[0].fix


def test_quiet_on_a_release_that_reads_the_engine_only_where_it_exists():
    assert all(ENTRY not in f.message for f in findings(scan_bytes("unsloth==2026.9.1\n" + TRACE)))


def test_quiet_on_another_frameworks_engines_attribute():
    log = "AttributeError: 'RayPPOTrainer' object has no attribute 'vllm_engines'\n"
    assert all(ENTRY not in f.message for f in findings(scan_bytes(log)))
