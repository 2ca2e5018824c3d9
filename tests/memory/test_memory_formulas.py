"""The plan's parts move the way the frameworks make them move (sharding, precision, TRL versions)."""

from __future__ import annotations

import pytest

from envdoctor.plan.memory.knobs import from_config as knobs
from envdoctor.plan.memory.parts import (
    GiB,
    allocated,
    lora_params,
    overhead_parts,
    trainer_parts,
    vllm_parts,
)
from envdoctor.plan.memory.shape import from_config
from tests.memory.configs import LLAMA3_8B, QWEN25_05B, QWEN25_7B

BASE = {
    "per_device_train_batch_size": 8,
    "max_prompt_length": 256,
    "max_completion_length": 512,
    "gradient_checkpointing": False,
    "bf16": True,
}


def parts(cfg=QWEN25_7B, trl="1.16.0", accelerate=None, world=1, **config):
    shape = from_config(cfg)
    k = knobs({**BASE, **config}, trl, shape.dtype, accelerate, world=world, node_ranks=world)
    return {p.name: p for p in trainer_parts(shape, k)}, shape, k


def test_fp32_adamw_is_16_bytes_per_parameter_before_activations():
    got, shape, _ = parts()
    p = shape.total_params()
    assert got["weights"].bytes == 4 * p and got["optimizer states"].bytes == 8 * p
    assert got["gradients"].bytes == 4 * p


def test_bf16_weights_halve_weights_grads_and_moments():
    fp32, shape, _ = parts()
    bf16, _, _ = parts(model_init_kwargs={"dtype": "bfloat16"})
    for name in ("weights", "optimizer states", "gradients"):
        assert bf16[name].bytes * 2 == fp32[name].bytes
    assert "autocast weight copies" not in bf16 and "autocast weight copies" in fp32


def test_dtype_auto_follows_the_checkpoint():
    got, shape, _ = parts(model_init_kwargs={"dtype": "auto"})
    assert got["weights"].bytes == 2 * shape.total_params()


@pytest.mark.parametrize("stage, opt_div, grad_div, weight_div", [(1, 4, 1, 1), (2, 4, 4, 1), (3, 4, 4, 4)])
def test_zero_stages_shard_as_the_paper_says(stage, opt_div, grad_div, weight_div):
    acc = {"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": stage}}
    got, shape, k = parts(accelerate=acc, world=4)
    p = shape.total_params()
    assert k.strategy == f"zero{stage}"
    assert got["optimizer states"].bytes == 12 * p // opt_div
    assert got["gradients"].bytes == 2 * p // grad_div
    if weight_div == 1:
        assert got["weights"].bytes == 2 * p
    else:  # a quarter plus the layers gathered in flight
        assert 2 * p // 4 < got["weights"].bytes < 2 * p // 2


def test_zero_offload_moves_the_optimizer_off_the_gpu():
    acc = {
        "distributed_type": "DEEPSPEED",
        "deepspeed_config": {"zero_stage": 2, "offload_optimizer_device": "cpu"},
    }
    got, _, k = parts(accelerate=acc, world=2)
    assert k.offload_optimizer and got["optimizer states"].bytes == 0


def test_fsdp_full_and_hybrid_shard():
    full, shape, _ = parts(
        accelerate={"distributed_type": "FSDP", "fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"}},
        world=8,
    )
    hybrid, _, k = parts(
        accelerate={"distributed_type": "FSDP", "fsdp_config": {"fsdp_sharding_strategy": "HYBRID_SHARD"}},
        world=8,
    )
    assert k.strategy == "fsdp_hybrid"
    assert full["optimizer states"].bytes == 8 * shape.total_params() // 8
    assert hybrid["optimizer states"].bytes == full["optimizer states"].bytes  # 8 ranks a node


def test_ddp_adds_gradient_buckets_only_with_several_ranks():
    one, _, _ = parts()
    two, _, _ = parts(world=2)
    assert "DDP gradient buckets" not in one and "DDP gradient buckets" in two


def test_gradient_checkpointing_cuts_activations():
    off, _, _ = parts()
    on, _, _ = parts(gradient_checkpointing=True)
    assert on["activations"].bytes * 5 < off["activations"].bytes


def test_activations_scale_with_tokens():
    small, _, _ = parts(per_device_train_batch_size=4)
    big, _, _ = parts(per_device_train_batch_size=8)
    assert big["activations"].bytes == pytest.approx(2 * small["activations"].bytes, rel=0.01)


def test_logits_materialized_before_trl_115_and_fused_after():
    old, shape, _ = parts(trl="1.14.0")
    new, _, _ = parts(trl="1.15.0")
    full = 8 * 513 * shape.vocab * 2
    assert old["log-prob logits"].bytes == 3 * full
    old4, _, _ = parts(trl="1.14.0", max_completion_length=2048)
    new4, _, _ = parts(trl="1.15.0", max_completion_length=2048)
    assert old4["log-prob logits"].bytes > 3.9 * old["log-prob logits"].bytes
    # fused: a fixed tile and the fp32 LM-head gradient; only the hidden gradient grows
    assert new4["log-prob logits"].bytes < 1.2 * new["log-prob logits"].bytes


def test_reference_model_follows_trl_beta_default():
    old, shape, k_old = parts(trl="0.18.2")
    new, _, k_new = parts(trl="0.19.0")
    assert k_old.beta == 0.04 and old["reference model"].bytes == 4 * shape.total_params()
    assert k_new.beta == 0.0 and "reference model" not in new


def test_trl_defaults_turn_on_gradient_checkpointing_and_bf16_by_release():
    """GRPOConfig at the tags: gradient_checkpointing=True from v0.22.0 (grpo_config.py, later
    base_config.py), bf16 = not fp16 from v0.19.0 (__post_init__)."""
    shape = from_config(QWEN25_05B)
    assert knobs({}, "1.0.0", shape.dtype).gradient_checkpointing is True
    assert knobs({}, "0.29.0", shape.dtype).gradient_checkpointing is True
    assert knobs({}, "0.22.0", shape.dtype).gradient_checkpointing is True
    assert knobs({}, "0.21.0", shape.dtype).gradient_checkpointing is False
    assert knobs({}, "0.29.0", shape.dtype).compute_bytes == 2
    assert knobs({}, "0.18.0", shape.dtype).compute_bytes == 4
    assert knobs({"fp16": True}, "0.29.0", shape.dtype).compute_bytes == 2
    assert knobs({}, "1.16.0", shape.dtype).completion_len == 512
    assert knobs({}, "1.9.0", shape.dtype).completion_len == 256


def test_lora_counts_adapters_and_drops_full_gradients():
    got, shape, k = parts(use_peft=True, lora_r=16, lora_target_modules=["q_proj", "v_proj"])
    # q: 3584 -> 3584, v: 3584 -> 512, r=16, 28 layers
    assert lora_params(shape, k) == 28 * 16 * ((3584 + 3584) + (3584 + 512))
    assert got["gradients"].bytes == 4 * lora_params(shape, k)
    assert got["optimizer states"].bytes == 8 * lora_params(shape, k)


def test_qlora_base_is_about_half_a_byte_per_linear_weight():
    got, shape, _ = parts(use_peft=True, load_in_4bit=True)
    assert got["weights"].bytes < 0.45 * 2 * shape.total_params()


def test_eight_bit_optimizer_is_two_bytes_per_parameter():
    got, shape, _ = parts(optim="adamw_8bit")
    assert got["optimizer states"].bytes == 2 * shape.total_params()


def test_kv_cache_per_token_for_llama3_8b():
    shape = from_config(LLAMA3_8B)
    assert shape.kv_bytes_per_token(2) == 2 * 32 * 8 * 128 * 2  # 128 KiB a token


def test_vllm_kv_room_shrinks_with_utilization():
    shape = from_config(QWEN25_7B)
    k = knobs({"use_vllm": True}, "1.16.0", shape.dtype)
    cap = 80 * GiB
    _, need, free_hi = vllm_parts(shape, k.replace(vllm_util=0.9), cap, 32768)
    _, _, free_lo = vllm_parts(shape, k.replace(vllm_util=0.3), cap, 32768)
    assert need == 32768 * shape.kv_bytes_per_token(2)
    assert free_hi - free_lo == pytest.approx(0.6 * cap, rel=0.001)


def test_allocated_leaves_out_context_and_margin():
    got, _, _ = parts()
    assert allocated(list(got.values())) == sum(p.bytes for p in got.values() if p.at_peak)


def test_default_optimizer_follows_the_installed_torch():
    shape = from_config(QWEN25_05B)
    assert knobs({}, "1.16.0", shape.dtype, torch="2.9.0+cu128").optim == "adamw_torch_fused"
    old = knobs({}, "1.16.0", shape.dtype, torch="2.5.1+cu124")
    assert old.optim == "adamw_torch"
    assert "optimizer step temporaries" in {p.name for p in trainer_parts(shape, old)}


# Measured on two H200s (docs/validation/memory-gpu-h200x2.md): FSDP's mixed precision gathers
# bf16 parameters (no autocast copies) and its streams leave 21-26 % reserved-but-unallocated;
# every rank of a multi-rank job holds ~0.8 GiB more outside PyTorch (NCCL's buffers).
FSDP_ACC = {
    "distributed_type": "FSDP",
    "mixed_precision": "bf16",
    "fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"},
}


def test_fsdp_makes_no_autocast_copies_of_fp32_weights():
    ddp, _, _ = parts(world=2)
    fsdp, _, _ = parts(accelerate=FSDP_ACC, world=2)
    assert "autocast weight copies" in ddp and "autocast weight copies" not in fsdp


def test_overheads_follow_the_strategy_and_the_rank_count():
    for acc, world, share, nccl in ((None, 1, 0.10, False), (None, 2, 0.10, True), (FSDP_ACC, 2, 0.25, True)):
        got, _, k = parts(accelerate=acc, world=world)
        over = {p.name: p for p in overhead_parts(list(got.values()), k)}
        alloc = sum(p.bytes for p in got.values() if p.at_peak)
        assert over["allocator fragmentation"].bytes == int(alloc * share)
        assert ("NCCL buffers" in over) is nccl
        assert allocated(list(got.values()) + list(over.values())) == alloc


def test_lora_leaves_out_the_frozen_lm_head_gradient():
    full, shape, _ = parts(cfg=QWEN25_05B)
    lora, _, _ = parts(cfg=QWEN25_05B, use_peft=True)
    head_grad = shape.vocab * shape.hidden * 4
    assert full["log-prob logits"].bytes - lora["log-prob logits"].bytes == head_grad
    assert "LM-head gradient" not in lora["log-prob logits"].note
