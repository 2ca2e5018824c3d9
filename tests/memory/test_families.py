"""Model families the decoder formula alone misses (issue #28, 5): a vision-language model's vision
tower, an MoE layer's per-expert token copies, and vLLM tensor parallel past the KV heads."""

from __future__ import annotations

import pytest

from envdoctor.plan.memory.knobs import Knobs
from envdoctor.plan.memory.parts import activations, vllm_parts
from envdoctor.plan.memory.shape import from_config, vision_params
from tests.memory.configs import GEMMA3_4B, QWEN3_30B_A3B, QWEN25_7B, QWEN25_VL_7B

GiB = 1024**3


def test_qwen25_vl_counts_its_vision_tower():
    vl, text = from_config(QWEN25_VL_7B), from_config(QWEN25_7B)
    assert vl.vision == pytest.approx(0.676e9, rel=0.01)  # the tower and its merger
    assert vl.total_params() == pytest.approx(8.29e9, rel=0.01)  # the model card's count
    assert text.vision == 0 and vl.total_params() - text.total_params() == vl.vision
    assert any("image tokens" in a for a in vl.assumed)  # what is still not planned is said


def test_gemma3_vision_under_text_config():
    shape = from_config(GEMMA3_4B)
    assert shape.hidden == 2560 and shape.family == "gemma3_text"
    assert shape.vision == pytest.approx(0.42e9, rel=0.02)  # SigLIP-So400m at 896 px + projector
    assert shape.total_params() == pytest.approx(4.30e9, rel=0.02)


@pytest.mark.parametrize("vision", [{}, {"depth": "32"}, {"hidden_size": 1280}, {"depth": 10**9}])
def test_a_tower_that_cannot_be_sized_counts_nothing(vision):
    assert vision_params(vision, 3584) == 0
    assert from_config({**QWEN25_7B, "vision_config": vision}).vision == 0


def test_vllm_weights_hold_the_vision_tower():
    vl, text = from_config(QWEN25_VL_7B), from_config(QWEN25_7B)
    k = Knobs()
    with_tower, without = (vllm_parts(s, k, 80 * GiB, 4096)[0][0] for s in (vl, text))
    assert with_tower.name == "vLLM weights" and with_tower.bytes - without.bytes == 2 * vl.vision


def test_moe_activations_carry_the_routed_token_copies():
    moe = from_config(QWEN3_30B_A3B)
    dense_like = from_config({**QWEN3_30B_A3B, "num_experts": 0})
    k = Knobs(batch=2, gradient_checkpointing=False)
    extra = activations(moe, k)[0] - activations(dense_like, k)[0]
    tokens, layers = 2 * k.seq_len, moe.layers
    # per layer and token: the copies in and out of 8 experts (bf16) and 128 fp32 router logits
    copies = (4 * 8 * moe.hidden + 8 * 128) * tokens * layers
    inter = (8 * (8 * 768 - 6144)) * tokens * layers  # the routed MLP width replaces the dense
    assert extra == copies + inter


@pytest.mark.parametrize(("tp", "heads"), [(1, 4), (2, 2), (4, 1), (8, 1)])
def test_kv_heads_are_replicated_past_the_tensor_parallel_size(tp, heads):
    moe = from_config(QWEN3_30B_A3B)  # 4 KV heads
    per_gpu = moe.kv_bytes_per_token_per_gpu(tp)
    assert per_gpu == 2 * moe.layers * heads * moe.head_dim * 2
    if tp == 8:
        assert per_gpu == 2 * moe.kv_bytes_per_token() // 8  # twice the even split


def test_vllm_kv_budget_uses_the_replicated_heads():
    moe = from_config(QWEN3_30B_A3B)
    parts, need, _ = vllm_parts(moe, Knobs(), 80 * GiB, 4096, tp=8)
    assert need == moe.kv_bytes_per_token_per_gpu(8) * 4096
    kv = next(p for p in parts if p.name == "vLLM KV cache")
    assert f"of {moe.kv_bytes_per_token_per_gpu(8):,} B" in kv.note
