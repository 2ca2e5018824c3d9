"""TRL 0.23's colocate importance-sampling correction on vLLM's raw logprobs is wrong only where
sampling moves the distribution away from the raw one: a temperature other than 1 (the fourteenth
held-out set: a published run at temperature 1.0 got the warning)."""

from __future__ import annotations

import pytest

from tests.conftest import findings, snapshot

ID = "trl-0.23-colocate-raw-logprobs-importance-sampling"
PACKAGES = {"trl": "0.23.1", "vllm": "0.10.2", "torch": "2.8.0", "transformers": "4.56.2"}


def _found(temperature: object) -> list:
    config = {"use_vllm": True, "vllm_mode": "colocate", "temperature": temperature}
    return [f for f in findings(snapshot(1, packages=PACKAGES), config=config) if f.evidence.get("id") == ID]


@pytest.mark.parametrize("temperature", [0.6, 1.2])
def test_a_temperature_other_than_one_is_likely_hit(temperature):
    assert [f.severity.value for f in _found(temperature)] == ["warning"]


@pytest.mark.parametrize("temperature", [1.0, 1])
def test_temperature_one_leaves_the_raw_distribution_and_is_quiet(temperature):
    assert _found(temperature) == []
