"""The probe takes the user's batch shape and precision from the config, within bounds."""

from __future__ import annotations

import pytest

from envdoctor.checks.context import Context
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.probe.plan.spec import batch_shape, spec_from_context
from tests.conftest import snapshot


def _spec(config: dict, launch: str = "torchrun --nproc_per_node 2 train.py"):
    ctx = Context(
        facts=from_dict(snapshot(2), "t"), plan=build_plan(launch=launch, config_dict=config, live=False)
    )
    return spec_from_context(ctx)


def test_the_configs_shape_and_precision_reach_the_probe():
    spec = _spec(
        {
            "num_generations": 4,
            "per_device_train_batch_size": "8",
            "gradient_accumulation_steps": 2,
            "fp16": "true",
            "bf16": False,
        }
    )
    assert (spec.num_generations, spec.per_device_train_batch_size, spec.gradient_accumulation_steps) == (
        4,
        8,
        2,
    )
    assert spec.fp16 is True and spec.bf16 is False
    assert spec.rank_gpus == {0: 0, 1: 1}


def test_without_a_config_the_probe_keeps_its_small_shape():
    spec = _spec({})
    assert (spec.num_generations, spec.per_device_train_batch_size, spec.bf16, spec.fp16) == (
        2,
        2,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("config", "note"),
    [
        ({"per_device_train_batch_size": 512}, "per_device_train_batch_size=512"),
        ({"num_generations": "eight"}, "not numeric"),
        ({"num_generations": 0}, "shape"),
    ],
)
def test_a_shape_too_big_or_broken_falls_back_and_says_so(config, note):
    shape, notes = batch_shape(config)
    assert shape == {"num_generations": 2, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1}
    assert len(notes) == 1 and note in notes[0]


def test_server_mode_probes_the_users_server_line_on_its_gpus():
    spec = _spec(
        {"use_vllm": True, "vllm_mode": "server", "vllm_group_port": 51300},
        "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Qwen2.5-7B --port 8011\n"
        "CUDA_VISIBLE_DEVICES=0 python train.py",
    )
    assert spec.use_vllm and spec.vllm_mode == "server"
    assert spec.server_launch is not None and spec.server_launch.launcher == "trl-vllm-serve"
    assert spec.server_visible == [1] and spec.rank_gpus == {0: 0}
    assert spec.user_server == ("127.0.0.1", 8011)  # read-only check of a running one
    assert spec.vllm == {"vllm_group_port": 51300}  # named in findings; the probe's is free


def test_colocate_passes_the_users_vllm_settings_as_given():
    spec = _spec(
        {
            "use_vllm": True,
            "vllm_mode": "colocate",
            "vllm_gpu_memory_utilization": 0.4,
            "vllm_tensor_parallel_size": 2,
            "vllm_enable_sleep_mode": True,
            "vllm_max_model_length": 8192,
        }
    )
    assert spec.vllm_mode == "colocate" and spec.server_launch is None
    assert spec.vllm == {
        "vllm_gpu_memory_utilization": 0.4,
        "vllm_tensor_parallel_size": 2,
        "vllm_enable_sleep_mode": True,
        "vllm_max_model_length": 8192,
    }
    assert spec.trainer_visible == [0, 1]


def test_use_vllm_false_keeps_the_trainers_own_generate():
    spec = _spec({"use_vllm": False, "vllm_mode": "colocate"})
    assert not spec.use_vllm and spec.vllm == {} and spec.vllm_mode is None


def test_legacy_trl_runs_vllm_device_as_given():
    from tests.conftest import LEGACY

    ctx = Context(
        facts=from_dict(snapshot(2, packages=LEGACY), "t"),
        plan=build_plan(
            launch="torchrun --nproc_per_node 1 train.py",
            live=False,
            config_dict={"use_vllm": True, "vllm_device": "cuda:1", "vllm_gpu_memory_utilization": 0.7},
        ),
    )
    spec = spec_from_context(ctx)
    assert spec.vllm_mode == "legacy" and spec.generation_gpus == [1]
    assert spec.vllm == {"vllm_device": "cuda:1", "vllm_gpu_memory_utilization": 0.7}


def test_the_users_lora_reaches_the_probe_with_trls_defaults():
    from envdoctor.probe.plan.spec import peft_settings

    assert peft_settings({}) is None and peft_settings({"use_peft": False, "lora_r": 8}) is None
    assert peft_settings({"use_peft": True}) == {
        "r": 16,
        "lora_alpha": 32,
        "lora_dropout": 0.05,
        "target_modules": None,
    }
    got = peft_settings(
        {
            "use_peft": "true",
            "lora_r": 64,
            "lora_alpha": 128,
            "lora_dropout": 0,
            "lora_target_modules": "q_proj, v_proj",
        }
    )
    assert got == {"r": 64, "lora_alpha": 128, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    assert (
        peft_settings({"use_peft": True, "lora_target_modules": "all-linear", "lora_r": -3})["target_modules"]
        == "all-linear"
    )
