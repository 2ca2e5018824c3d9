"""The probe model's size budget holds for every shape (issue 37): a local config.json with a
3,000,000 vocabulary × 4096 hidden gave a "reduced" model of 24.8 B parameters (the vocabulary and
hidden size were never reduced), and the writer asked torch for 24.6 GB with no cap. Now the
vocabulary, then the width, are cut where they must be (``probe.model.deviations`` says so), and
the writer counts the parameters before it allocates them and stops cleanly past its cap."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.probe.plan.model_source import PARAM_BUDGET, _params, choose, over_budget, reduce_config
from envdoctor.probe.stage import model_files
from envdoctor.probe.stage.model_files import ModelWriter
from tests.probe.test_probe_model import QWEN25_05B_FULL, _cache, _dir

HUGE_VOCAB = {
    **QWEN25_05B_FULL,
    "vocab_size": 3_000_000,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 11008,
    "tie_word_embeddings": False,
}


def test_a_3m_vocabulary_is_cut_to_the_budget_and_the_tokenizer_is_byte_level(tmp_path):
    cfg, notes = reduce_config(HUGE_VOCAB)
    assert _params(cfg) <= PARAM_BUDGET
    assert cfg["hidden_size"] == 4096 and cfg["num_attention_heads"] == 32  # the width kept
    assert cfg["vocab_size"] < 3_000_000
    assert any("vocab_size" in n and "3000000" in n.replace(",", "") for n in notes), notes
    model = choose("org/huge", _cache(tmp_path, "org/huge", HUGE_VOCAB, tokenizer=True))
    assert model.tokenizer_dir is None  # its ids would not fit the cut vocabulary
    assert any("vocab_size" in n for n in model.summary["deviations"])
    assert model.summary["vocab_size"] == cfg["vocab_size"]


def test_a_width_past_the_budget_is_narrowed_keeping_the_head_dim():
    wide = {
        **QWEN25_05B_FULL,
        "hidden_size": 65536,
        "num_attention_heads": 512,
        "num_key_value_heads": 64,
        "head_dim": 128,
        "intermediate_size": 65536 * 4,
    }
    cfg, notes = reduce_config(wide)
    assert _params(cfg) <= PARAM_BUDGET
    assert cfg["head_dim"] == 128 and cfg["hidden_size"] == cfg["num_attention_heads"] * 128
    assert cfg["num_attention_heads"] % cfg["num_key_value_heads"] == 0
    assert any("hidden_size" in n for n in notes), notes


def test_a_shape_no_cut_can_fit_runs_the_generic_model(tmp_path):
    absurd = {
        **QWEN25_05B_FULL,
        "hidden_size": 10**7,
        "num_attention_heads": 1,
        "num_key_value_heads": 1,
        "head_dim": 10**7,
    }
    model = choose(str(_dir(tmp_path, absurd)), {})
    assert not model.faithful and "budget" in model.deviations[0]


_SHAPES = st.fixed_dictionaries(
    {
        "vocab_size": st.integers(1, 10**8),
        "hidden_size": st.integers(1, 10**6),
        "num_attention_heads": st.integers(1, 1024),
        "num_key_value_heads": st.integers(1, 1024),
        "intermediate_size": st.integers(1, 10**7),
        "num_hidden_layers": st.integers(1, 200),
        "tie_word_embeddings": st.booleans(),
    },
    optional={
        "head_dim": st.integers(1, 4096),
        "num_experts": st.integers(1, 512),
        "num_experts_per_tok": st.integers(1, 16),
        "moe_intermediate_size": st.integers(1, 10**5),
    },
)


@settings(max_examples=300, deadline=None)
@given(_SHAPES)
def test_every_shape_stays_within_the_budget_or_runs_the_generic_model(shape):
    cfg, notes = reduce_config({**QWEN25_05B_FULL, **shape})
    if not over_budget(cfg):
        assert _params(cfg) <= PARAM_BUDGET
        return
    with tempfile.TemporaryDirectory() as tmp:  # no cut fits: the generic model, saying why
        (Path(tmp) / "config.json").write_text(json.dumps({**QWEN25_05B_FULL, **shape}))
        model = choose(tmp, {})
    assert not model.faithful and "budget" in model.deviations[0]


def test_the_writer_counts_before_it_allocates_and_stops_past_its_cap(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    shaped = {
        **QWEN25_05B_FULL,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
    }
    model = choose(str(_dir(tmp_path, shaped)), {})
    monkeypatch.setattr(model_files, "WRITER_MAX_PARAMETERS", 10_000)
    writer = ModelWriter(
        model,
        tmp_path / "out" / "model",
        sys.executable,
        {**os.environ, "CUDA_VISIBLE_DEVICES": ""},
        timeout_s=300,
    )
    with pytest.raises(RuntimeError, match="parameters"):
        writer.wait()
    written = json.loads((tmp_path / "out" / "model" / "writer.json").read_text())
    assert written["error"]["type"] == "ProbeModelTooLarge"
    assert not (tmp_path / "out" / "model" / "model.safetensors").exists()
