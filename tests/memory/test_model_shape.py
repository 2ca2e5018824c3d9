"""Parameter counts from config.json against published counts; finding configs offline."""

from __future__ import annotations

import json

import pytest

from envdoctor.errors import InputError
from envdoctor.plan.memory.shape import (
    find_config,
    from_config,
    load_shape,
    parse_count,
    shape_from_count,
)
from tests.memory.configs import KNOWN, QWEN3_30B_A3B, QWEN25_05B


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_parameter_count_matches_the_published_one(name):
    cfg, published = KNOWN[name]
    assert from_config(cfg, name).total_params() == published


def test_moe_active_parameters_count_only_routed_experts():
    shape = from_config(QWEN3_30B_A3B)
    active = shape.active_params()
    assert 3.0e9 < active < 3.6e9  # the model card's "3.3B activated"
    assert shape.total_params() > 9 * active


def test_kv_bytes_per_token():
    shape = from_config(QWEN25_05B)
    assert shape.kv_bytes_per_token(2) == 2 * 24 * 2 * 64 * 2


def test_multimodal_wrapper_reads_text_config():
    cfg = {
        "model_type": "gemma3",
        "text_config": {**QWEN25_05B, "model_type": "gemma3_text"},
        "torch_dtype": "bfloat16",
    }
    shape = from_config(cfg)
    assert shape.layers == 24 and shape.family == "gemma3_text" and shape.dtype == "bfloat16"


def test_unknown_family_is_counted_with_an_assumption():
    shape = from_config({**QWEN25_05B, "model_type": "newfamily"})
    assert shape.assumed and "Llama-like" in shape.assumed[0]


def test_config_without_sizes_is_an_input_error():
    with pytest.raises(InputError, match="hidden_size"):
        from_config({"model_type": "llama"})


def test_local_directory(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN25_05B))
    shape = load_shape(str(tmp_path))
    assert shape is not None and shape.total_params() == 494_032_768


def test_hub_cache_snapshot_via_refs(tmp_path):
    repo = tmp_path / "hub" / "models--Qwen--Qwen2.5-0.5B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text(json.dumps(QWEN25_05B))
    env = {"HF_HOME": str(tmp_path)}
    assert find_config("Qwen/Qwen2.5-0.5B", env) == repo / "snapshots/abc123/config.json"
    assert find_config("Qwen/Qwen2.5-0.5B", {"HF_HUB_CACHE": str(tmp_path / "hub")}) is not None
    assert find_config("Qwen/Qwen2.5-7B", env) is None


def test_model_not_here_is_none(tmp_path):
    assert load_shape("org/absent-model", {"HF_HOME": str(tmp_path)}) is None


def test_bad_config_json_names_the_file(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="config.json"):
        load_shape(str(tmp_path))


@pytest.mark.parametrize(
    "text,count",
    [("7B", 7_000_000_000), ("1.5b", 1_500_000_000), ("500M", 500_000_000), ("494032768", 494_032_768)],
)
def test_parse_count(text, count):
    assert parse_count(text) == count


@pytest.mark.parametrize("text", ["seven", "7X", "0", "1e30", ""])
def test_parse_count_refuses(text):
    with pytest.raises(InputError, match="--model-params"):
        parse_count(text)


def test_shape_from_count_keeps_the_users_total():
    shape = shape_from_count(7_000_000_000)
    assert shape.total_params() == 7_000_000_000 and shape.hidden == 3584 and shape.assumed
