"""The probe model: the user's shape from a cached config.json (never downloaded), reduced in
depth only; the generic model when no config is here; weights written by transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.plan.launch import parse_launch
from envdoctor.probe.plan.model_source import choose, describe, reduce_config, user_model_name
from envdoctor.probe.stage.model_files import ModelWriter
from tests.memory.configs import QWEN3_06B, QWEN3_30B_A3B, QWEN25_05B

#: Qwen/Qwen2.5-0.5B-Instruct's config.json as published (every key)
QWEN25_05B_FULL = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "hidden_act": "silu",
    "hidden_size": 896,
    "initializer_range": 0.02,
    "intermediate_size": 4864,
    "max_position_embeddings": 32768,
    "max_window_layers": 21,
    "model_type": "qwen2",
    "num_attention_heads": 14,
    "num_hidden_layers": 24,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}
LLAMA32_1B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 128256,
    "tie_word_embeddings": True,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "torch_dtype": "bfloat16",
    "rope_scaling": {
        "factor": 32.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
}


def _cache(tmp_path: Path, repo: str, config: dict, tokenizer: bool = False) -> dict[str, str]:
    """A Hugging Face cache holding ``repo``'s config (and a tokenizer) at one snapshot."""
    root = tmp_path / "hub" / ("models--" + repo.replace("/", "--"))
    snap = root / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    if tokenizer:
        (snap / "tokenizer.json").write_text("{}")
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text("a" * 40)
    return {"HF_HUB_CACHE": str(tmp_path / "hub")}


def test_a_cached_qwen25_config_gives_a_probe_model_of_its_shape(tmp_path):
    env = _cache(tmp_path, "Qwen/Qwen2.5-0.5B-Instruct", QWEN25_05B_FULL, tokenizer=True)
    model = choose("Qwen/Qwen2.5-0.5B-Instruct", env)
    assert model.faithful and model.source.endswith("config.json")
    cfg = model.config
    for key in (
        "architectures",
        "model_type",
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "vocab_size",
        "max_position_embeddings",
        "rope_theta",
        "tie_word_embeddings",
        "torch_dtype",
        "intermediate_size",
        "sliding_window",
    ):
        assert cfg[key] == QWEN25_05B_FULL[key], key
    assert cfg["num_hidden_layers"] == 2 and cfg["max_window_layers"] == 2
    assert model.tokenizer_dir is not None
    assert model.summary["layers"] == 2 and model.summary["user_layers"] == 24
    assert model.summary["head_dim"] == 64 and model.summary["tokenizer"] == "the model's own"
    assert model.deviations == ["2 of 24 layers"]


def test_qwen3_keeps_its_head_dim_and_llama_its_rope_scaling():
    q3, _ = reduce_config(QWEN3_06B)
    assert q3["head_dim"] == 128 and q3["num_key_value_heads"] == 8 and q3["num_hidden_layers"] == 2
    ll, _ = reduce_config(LLAMA32_1B)
    assert ll["rope_scaling"] == LLAMA32_1B["rope_scaling"] and ll["head_dim"] == 64
    assert describe(ll)["max_position_embeddings"] == 131072


def test_moe_keeps_top_k_experts_and_says_so():
    cfg, notes = reduce_config(QWEN3_30B_A3B)
    assert cfg["num_experts"] == 8 and cfg["num_experts_per_tok"] == 8
    assert cfg["moe_intermediate_size"] == 768 and cfg["num_hidden_layers"] == 2
    assert "8 of 128 routed experts (top-8 kept)" in notes


def test_layer_kinds_are_all_kept_and_vision_towers_cut():
    hybrid = {
        **QWEN25_05B,
        "num_hidden_layers": 8,
        "layer_types": ["linear_attention"] * 3
        + ["full_attention"]
        + ["linear_attention"] * 3
        + ["full_attention"],
    }
    cfg, _ = reduce_config(hybrid)
    assert set(cfg["layer_types"]) == {"linear_attention", "full_attention"}
    assert cfg["num_hidden_layers"] == len(cfg["layer_types"]) == 2
    vl = {
        **QWEN25_05B,
        "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "vision_config": {"depth": 32, "hidden_size": 1280, "fullatt_block_indexes": [7, 15]},
    }
    cfg, notes = reduce_config(vl)
    assert cfg["vision_config"]["depth"] == 1 and cfg["vision_config"]["hidden_size"] == 1280
    assert "vision tower: 1 of 32 blocks" in notes


def test_a_huge_mlp_is_narrowed_then_the_vocabulary_never_the_attention():
    big = {
        **QWEN25_05B,
        "hidden_size": 8192,
        "intermediate_size": 29568,
        "vocab_size": 152064,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "num_hidden_layers": 80,
        "tie_word_embeddings": False,
    }
    cfg, notes = reduce_config(big)
    assert cfg["intermediate_size"] == 8192 and cfg["hidden_size"] == 8192
    assert cfg["num_attention_heads"] == 64
    assert any("intermediate_size 8192 instead of 29568" in n for n in notes)
    # its untied 152,064 × 8,192 embeddings alone are 2.5 B parameters: the vocabulary is cut to
    # the budget (issue 37), with a byte-level tokenizer
    assert cfg["vocab_size"] < 152064 and any("vocab_size" in n for n in notes)
    small, notes = reduce_config(QWEN25_05B)
    assert small["intermediate_size"] == 4864 and not any("intermediate" in n for n in notes)


def test_without_a_config_here_the_generic_model_runs_and_the_report_says_why(tmp_path):
    model = choose("Qwen/Qwen2.5-7B-Instruct", {"HF_HUB_CACHE": str(tmp_path)})
    assert not model.faithful and model.summary["source"] == "generic"
    assert "not on this machine (no download)" in model.deviations[0]
    assert model.summary["max_position_embeddings"] == 2048  # vLLM starts it at every batch
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    assert "not a readable JSON config" in choose(str(bad), {}).deviations[0]
    assert "no model named" in choose(None).deviations[0]


def test_the_model_name_comes_from_the_config_then_the_launch_lines():
    assert user_model_name({"model_name_or_path": " Qwen/Qwen3-0.6B "}) == "Qwen/Qwen3-0.6B"
    server = parse_launch("CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Qwen3-8B")
    assert user_model_name({}, server=server) == "Qwen/Qwen3-8B"
    served = parse_launch("vllm serve meta-llama/Llama-3.2-1B --port 8000")
    assert user_model_name({}, server=served) == "meta-llama/Llama-3.2-1B"
    trainer = parse_launch("trl grpo --model_name_or_path Qwen/Qwen2.5-1.5B --num_processes 1")
    assert user_model_name({}, trainer=trainer) == "Qwen/Qwen2.5-1.5B"
    assert user_model_name({}) is None


@pytest.mark.probe
def test_the_writer_builds_random_weights_transformers_loads_at_the_users_width(tmp_path):
    pytest.importorskip("transformers")
    shaped = {
        **QWEN25_05B_FULL,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
    }
    env = _cache(tmp_path, "org/small", shaped)
    model = choose("org/small", env)
    folder = tmp_path / "probe" / "model"
    info = ModelWriter(
        model, folder, sys.executable, {**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout_s=300
    ).wait()
    assert info["class"] == "Qwen2ForCausalLM" and info["dtype"] == "bfloat16"
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import json,sys,transformers as t;"
                f"m=t.AutoModelForCausalLM.from_pretrained({str(folder)!r});"
                f"k=t.AutoTokenizer.from_pretrained({str(folder)!r});"
                "print(json.dumps([m.config.num_hidden_layers,m.config.hidden_size,"
                "m.config.vocab_size,len(k('the cat')['input_ids']),m.config.eos_token_id]))"
            ),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    layers, hidden, vocab, n_tokens, eos = json.loads(out.stdout.strip().splitlines()[-1])
    assert (layers, hidden, vocab) == (2, 128, 1000)
    assert n_tokens == 7 and eos == 256  # the byte-level tokenizer, and its EOS in the config


def test_a_writer_failure_names_the_reason(tmp_path):
    broken = {**QWEN25_05B, "model_type": "no_such_family_xyz", "architectures": ["NoSuchForCausalLM"]}
    model = choose(str(_dir(tmp_path, broken)), {})
    with pytest.raises(RuntimeError, match="could not build it|exited"):
        ModelWriter(
            model,
            tmp_path / "out" / "model",
            sys.executable,
            {**os.environ, "CUDA_VISIBLE_DEVICES": ""},
            timeout_s=300,
        ).wait()


def _dir(tmp_path: Path, config: dict) -> Path:
    folder = tmp_path / "user-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.probe
def test_check_probe_on_the_cpu_runs_the_users_shape_and_says_the_proof_needs_vllm(tmp_path):
    """Done when of issue 25 without a GPU: `check --probe` with a cached Qwen2.5 config reports
    probe.model (its shape, 2 of 24 layers) and the weight-sync proof needing vLLM."""
    pytest.importorskip("trl")
    from tests.conftest import run_cli

    env = _cache(tmp_path, "Qwen/Qwen2.5-0.5B-Instruct", QWEN25_05B_FULL)
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(
        "model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\nuse_vllm: false\n"
        "per_device_train_batch_size: 2\nnum_generations: 2\n"
    )
    bin_dir = os.path.dirname(sys.executable)
    r = run_cli(
        "check",
        "--probe",
        "--probe-timeout",
        "600",
        "--config",
        str(cfg),
        "--format",
        "json",
        "--",
        "python",
        "train.py",
        cwd=tmp_path,
        env={**env, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")},
        timeout=900,
    )
    report = json.loads(r.stdout)
    probe = report["probe"]
    assert probe["status"] == "pass", r.stdout[-3000:]
    model = probe["model"]
    assert model["ran"] == "the user's shape" and model["architecture"] == "Qwen2ForCausalLM"
    assert (
        model["hidden_size"],
        model["num_attention_heads"],
        model["kv_heads"],
        model["head_dim"],
        model["vocab_size"],
        model["max_position_embeddings"],
        model["layers"],
        model["user_layers"],
    ) == (896, 14, 2, 64, 151936, 32768, 2, 24)
    assert model["writer"]["class"] == "Qwen2ForCausalLM"
    assert probe["weight_sync"]["checked"] is False
    assert "needs vLLM" in probe["weight_sync"]["reason"]
    summary = next(a["summary"] for a in report["areas"] if a["key"] == "probe")
    assert "Qwen2ForCausalLM shape of" in summary and "2 of 24 layers" in summary
