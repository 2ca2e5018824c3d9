"""LoRA under ZeRO-3 / FSDP full shard: the frozen base weights are sharded too (issue #28, 4).

DeepSpeed ZeRO-3 partitions every parameter, frozen or not (https://deepspeed.readthedocs.io/en/
stable/zero3.html; deepspeedai/DeepSpeed#8130 is about frozen LoRA / quantized-base parameters
partitioned under ZeRO-3); FSDP flattens and shards every parameter of a wrapped module, frozen
ones included (huggingface/accelerate#2253; PEFT's FSDP guide trains Llama-70B + LoRA on 8 × 80 GB,
https://huggingface.co/docs/peft/accelerate/fsdp). ZeRO-1/2 shard no weights."""

from __future__ import annotations

from envdoctor.plan.memory.knobs import Knobs
from envdoctor.plan.memory.parts import GiB, trainer_parts
from envdoctor.plan.memory.shape import from_config as shape_from_config
from tests.conftest import H100, snapshot
from tests.memory.configs import QWEN25_32B, QWEN25_72B
from tests.memory.test_memory_rules import fired

LORA = {
    "use_peft": True,
    "lora_r": 16,
    "lora_target_modules": "all-linear",
    "model_init_kwargs": {"dtype": "bfloat16"},
    "gradient_checkpointing": True,
    "per_device_train_batch_size": 4,
    "max_completion_length": 512,
}


def _weights(config: dict, **knobs) -> int:
    parts = trainer_parts(shape_from_config(config, "m"), Knobs(lora=True, weight_bytes=2, **knobs))
    return next(p.bytes for p in parts if p.name == "weights")


def test_lora_base_weights_are_sharded_under_zero3_and_fsdp_full_shard():
    full = _weights(QWEN25_72B, strategy="zero2", world=6)
    assert full > 130 * GiB  # ZeRO-2 shards no weights
    for strategy in ("zero3", "fsdp_full"):
        assert _weights(QWEN25_72B, strategy=strategy, world=6) < full / 6 + 8 * GiB


def test_72b_lora_zero3_over_six_ranks_is_planned_near_45_gib(model_dir):
    """Without TRL's whole-model gather for generation (``ds3_gather_for_generation: false``)."""
    acc = "accelerate launch --use_deepspeed --zero_stage 3 --num_processes 6 train.py"
    config = {"model_name_or_path": model_dir(QWEN25_72B), **LORA, "ds3_gather_for_generation": False}
    got = fired(snapshot(n_gpus=6, model=H100), config, acc)
    assert "MEM101" not in got
    row = (got.get("MEM104") or got["MEM102"])[0].evidence["plan"]
    assert row["total_bytes"] < 70 * GiB


def test_72b_lora_zero3_gathering_the_model_to_generate_does_not_fit(model_dir):
    """TRL's default ``ds3_gather_for_generation: true`` gathers every parameter on each rank
    while it generates without vLLM (GRPOConfig's help: disabling it "allows training models that
    exceed the VRAM capacity of a single GPU"): 72B in bf16 is 135 GiB on an 80 GiB card."""
    acc = "accelerate launch --use_deepspeed --zero_stage 3 --num_processes 6 train.py"
    got = fired(snapshot(n_gpus=6, model=H100), {"model_name_or_path": model_dir(QWEN25_72B), **LORA}, acc)
    (finding,) = got["MEM101"]
    parts = {p["part"]: p for p in finding.evidence["plan"]["parts"]}
    assert parts["model gathered for generation"]["at_peak"]
    assert "ds3_gather_for_generation: false" in finding.fix


def test_32b_lora_fsdp_full_shard_is_no_error(model_dir):
    acc = "accelerate launch --use_fsdp --fsdp_sharding_strategy FULL_SHARD --num_processes 8 train.py"
    got = fired(snapshot(n_gpus=8, model=H100), {"model_name_or_path": model_dir(QWEN25_32B), **LORA}, acc)
    assert "MEM101" not in got and "MEM102" not in got


def test_32b_lora_without_sharding_still_does_not_fit(model_dir):
    acc = "accelerate launch --use_deepspeed --zero_stage 2 --num_processes 8 train.py"
    got = fired(snapshot(n_gpus=8, model=H100), {"model_name_or_path": model_dir(QWEN25_32B), **LORA}, acc)
    assert "MEM101" in got or "MEM102" in got
