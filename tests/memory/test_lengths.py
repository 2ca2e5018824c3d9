"""MEM105 (max_model_len beyond the model's length) and MEM106 (below prompt + completion): each
fires in one scenario and stays quiet in another (issue #28, 7)."""

from __future__ import annotations

from envdoctor.plan.memory.shape import from_config as shape_from_config
from tests.conftest import H100, snapshot
from tests.memory.configs import QWEN25_05B
from tests.memory.test_memory_rules import fired

ONE = "torchrun --nproc_per_node 1 train.py"
RULES = ["MEM105", "MEM106"]


def _colocate(model: str, **cfg) -> dict:
    return {
        "model_name_or_path": model,
        "use_vllm": True,
        "vllm_mode": "colocate",
        "gradient_checkpointing": True,
        "model_init_kwargs": {"dtype": "bfloat16"},
        **cfg,
    }


def _got(model_dir, config: dict, cfg: dict, launch: str = ONE) -> dict:
    got = fired(snapshot(n_gpus=1, model=H100), _colocate(model_dir(config), **cfg), launch)
    return {k: v for k, v in got.items() if k in RULES}


def test_mem105_fires_past_max_position_embeddings(model_dir):
    got = _got(model_dir, QWEN25_05B, {"vllm_max_model_length": 65536, "max_completion_length": 1024})
    f = got["MEM105"][0]
    assert f.severity.value == "error" and "32768" in f.message and "65536" in f.message
    assert "vllm_max_model_length 32768" in f.fix


def test_mem105_quiet_within_yarn_scaling_or_with_the_override(model_dir):
    yarn = {
        **QWEN25_05B,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    }
    assert shape_from_config(yarn).derived_max_len() == 131072
    cfg = {"vllm_max_model_length": 65536, "max_completion_length": 1024}
    assert "MEM105" not in _got(model_dir, yarn, cfg)
    launch = "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 torchrun --nproc_per_node 1 train.py"
    assert "MEM105" not in _got(model_dir, QWEN25_05B, cfg, launch)
    assert "MEM105" not in _got(model_dir, QWEN25_05B, {"vllm_max_model_length": 4096})


def test_llama3_rope_is_not_scaled_again():
    cfg = {
        **QWEN25_05B,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
    }
    assert shape_from_config(cfg).derived_max_len() == 131072


def test_mem106_warns_when_completion_leaves_no_room_for_the_prompt(model_dir):
    got = _got(model_dir, QWEN25_05B, {"vllm_max_model_length": 1024, "max_completion_length": 1024})
    f = got["MEM106"][0]
    assert f.severity.value == "warning" and "1024" in f.message and "assumed" in f.message


def test_mem106_error_when_a_known_prompt_is_refused(model_dir):
    got = _got(
        model_dir,
        QWEN25_05B,
        {"vllm_max_model_length": 2048, "max_completion_length": 1024, "max_prompt_length": 3000},
    )
    f = got["MEM106"][0]
    assert f.severity.value == "error" and "refuses" in f.message
    assert "4024" in f.fix


def test_mem106_quiet_when_the_prompt_is_taken_from_max_model_len(model_dir):
    got = _got(model_dir, QWEN25_05B, {"vllm_max_model_length": 4096, "max_completion_length": 1024})
    assert got == {}


def test_server_max_model_len_is_judged_too(model_dir):
    cfg = {
        "model_name_or_path": model_dir(QWEN25_05B),
        "use_vllm": True,
        "vllm_mode": "server",
        "max_completion_length": 512,
    }
    launch = (
        "CUDA_VISIBLE_DEVICES=0 torchrun --nproc_per_node 1 train.py\n"
        "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m --max_model_len 40000"
    )
    got = fired(snapshot(n_gpus=2, model=H100), cfg, launch)
    assert "--max_model_len 32768" in got["MEM105"][0].fix
