"""The probe takes the user's batch shape and precision from the config, within bounds."""

from __future__ import annotations

import pytest

from envdoctor.checks.context import Context
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.probe.plan import batch_shape, spec_from_context
from tests.conftest import snapshot


def _spec(config: dict, launch: str = "torchrun --nproc_per_node 2 train.py"):
    ctx = Context(facts=from_dict(snapshot(2), "t"),
                  plan=build_plan(launch=launch, config_dict=config, live=False))
    return spec_from_context(ctx)


def test_the_configs_shape_and_precision_reach_the_probe():
    spec = _spec({"num_generations": 4, "per_device_train_batch_size": "8",
                  "gradient_accumulation_steps": 2, "fp16": "true", "bf16": False})
    assert (spec.num_generations, spec.per_device_train_batch_size,
            spec.gradient_accumulation_steps) == (4, 8, 2)
    assert spec.fp16 is True and spec.bf16 is False
    assert spec.rank_gpus == {0: 0, 1: 1}


def test_without_a_config_the_probe_keeps_its_small_shape():
    spec = _spec({})
    assert (spec.num_generations, spec.per_device_train_batch_size, spec.bf16, spec.fp16) == \
        (2, 2, None, None)


@pytest.mark.parametrize(("config", "note"), [
    ({"per_device_train_batch_size": 512}, "per_device_train_batch_size=512"),
    ({"num_generations": "eight"}, "not numeric"),
    ({"num_generations": 0}, "shape"),
])
def test_a_shape_too_big_or_broken_falls_back_and_says_so(config, note):
    shape, notes = batch_shape(config)
    assert shape == {"num_generations": 2, "per_device_train_batch_size": 2,
                     "gradient_accumulation_steps": 1}
    assert len(notes) == 1 and note in notes[0]
