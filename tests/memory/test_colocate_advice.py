"""One plan, one coherent advice for vLLM colocated (issue #28, 3): MEM101 never proposes a
fraction that starves the KV cache, and MEM103 says when no fraction holds both the step and the
KV cache, proposing what does (vLLM tensor parallel across the colocated ranks, sleep mode,
server mode)."""

from __future__ import annotations

import re

from tests.conftest import H100, snapshot
from tests.memory.configs import LLAMA3_8B, QWEN3_30B_A3B
from tests.memory.test_memory_rules import fired

ZERO3 = "accelerate launch --use_deepspeed --zero_stage 3 --num_processes 8 train.py"
MOE = {
    "use_vllm": True,
    "vllm_mode": "colocate",
    "vllm_gpu_memory_utilization": 0.3,
    "model_init_kwargs": {"dtype": "bfloat16"},
    "gradient_checkpointing": True,
    "per_device_train_batch_size": 4,
    "max_completion_length": 1024,
}


def test_qwen3_moe_zero3_colocate_advice_agrees(model_dir):
    got = fired(
        snapshot(n_gpus=8, model=H100), {"model_name_or_path": model_dir(QWEN3_30B_A3B), **MOE}, ZERO3
    )
    mem101, mem103 = got["MEM101"][0].fix, got["MEM103"][0].fix
    # no lower fraction on one GPU: only with vLLM split over the colocated ranks
    lowered = re.findall(r"vllm_gpu_memory_utilization: [\d.]+[^;]*", mem101)
    assert lowered and all("vllm_tensor_parallel_size: 8" in f for f in lowered)
    # MEM103 does not tell to raise the fraction the step cannot give
    assert "no vllm_gpu_memory_utilization holds both" in mem103
    assert "vllm_tensor_parallel_size: 8" in mem103 and "vllm_mode: server" in mem103
    assert "sleep" not in mem103  # 0.80 beside the weights and optimizer states does not fit


def test_raising_the_fraction_is_said_plainly_where_it_is_enough(model_dir):
    cfg = {
        "model_name_or_path": model_dir(LLAMA3_8B),
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_gpu_memory_utilization": 0.3,
        "use_peft": True,
        "max_prompt_length": 512,
        "model_init_kwargs": {"dtype": "bfloat16"},
        "gradient_checkpointing": True,
        "per_device_train_batch_size": 2,
        "vllm_max_model_length": 131072,
        "max_completion_length": 512,
    }
    got = fired(
        snapshot(n_gpus=1, model=H100),
        cfg,
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 torchrun --nproc_per_node 1 train.py",
    )
    fix = got["MEM103"][0].fix
    assert "holds both" not in fix and re.search(r"vllm_gpu_memory_utilization 0\.\d\d", fix)
