"""Write the probe's tiny model to a folder, with the stdlib only (no torch in envdoctor's process).

vLLM (server, colocate, legacy) loads a model from a path, and the trainer must hold the same
names and shapes for the weight sync, so both read this folder: a Qwen2 config, bf16 weights in
safetensors, and a byte-level BPE tokenizer (256 byte tokens, no merges) in ``tokenizer.json``.

Shape: 2 heads of 64, 2 KV heads, 24 layers — the KV cache per token (12 KiB) of a
Qwen2.5-0.5B, so a vLLM fraction of a large GPU holds a few million tokens, not the tens of
millions a 2-layer toy gets (vLLM's FA3 kernels were seen to fail there, see
docs/validation/probe-vllm-h100.md). Still ~4 M parameters: it trains in well under a second.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

HIDDEN, HEADS, KV_HEADS, LAYERS, INTERMEDIATE = 128, 2, 2, 24, 256
VOCAB = 258  # 256 bytes + 2 specials: no id the tokenizer cannot decode
EOS, PAD = 256, 257
#: positions: with 256, vLLM 0.26's FA3 kernels faulted at max_num_seqs 8 (and started at 4 and
#: 16); with 2048 the same model started at every batch (docs/validation/probe-model-gpu.md)
MAX_LEN = 2048
_POOL = 8191  # distinct random values, tiled over every tensor


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character table (what byte-level BPE vocabularies use)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _tensors() -> list[tuple[str, list[int], str]]:
    """(name, shape, fill) of every Qwen2 weight; fill: random | ones | zeros."""
    head = HIDDEN // HEADS
    out: list[tuple[str, list[int], str]] = [("model.embed_tokens.weight", [VOCAB, HIDDEN], "random")]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", [HIDDEN], "ones"),
            (p + "post_attention_layernorm.weight", [HIDDEN], "ones"),
            (p + "self_attn.q_proj.weight", [HEADS * head, HIDDEN], "random"),
            (p + "self_attn.q_proj.bias", [HEADS * head], "zeros"),
            (p + "self_attn.k_proj.weight", [KV_HEADS * head, HIDDEN], "random"),
            (p + "self_attn.k_proj.bias", [KV_HEADS * head], "zeros"),
            (p + "self_attn.v_proj.weight", [KV_HEADS * head, HIDDEN], "random"),
            (p + "self_attn.v_proj.bias", [KV_HEADS * head], "zeros"),
            (p + "self_attn.o_proj.weight", [HIDDEN, HEADS * head], "random"),
            (p + "mlp.gate_proj.weight", [INTERMEDIATE, HIDDEN], "random"),
            (p + "mlp.up_proj.weight", [INTERMEDIATE, HIDDEN], "random"),
            (p + "mlp.down_proj.weight", [HIDDEN, INTERMEDIATE], "random"),
        ]
    out.append(("model.norm.weight", [HIDDEN], "ones"))
    return out


def _bf16(x: float) -> bytes:
    return struct.pack("<I", struct.unpack("<I", struct.pack("<f", x))[0] >> 16)[:2]


def _safetensors(path: Path, seed: int) -> int:
    rng = random.Random(seed)  # noqa: S311 - weights of a toy model, not secrets
    pool = b"".join(_bf16(rng.gauss(0.0, 0.02)) for _ in range(_POOL))
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    chunks, offset = [], 0
    for n, (name, shape, fill) in enumerate(_tensors()):
        count = 1
        for dim in shape:
            count *= dim
        if fill == "random":
            start = (n * 97) % _POOL * 2
            data = (pool * (2 * count // len(pool) + 2))[start : start + 2 * count]
        else:
            data = (_bf16(1.0) if fill == "ones" else b"\0\0") * count
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(head)))
        fh.write(head)
        for c in chunks:
            fh.write(c)
    return sum(1 for _ in chunks)


def _tokenizer() -> dict:
    table = _bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    special = [
        {
            "id": i,
            "content": c,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, c in ((EOS, "<|endoftext|>"), (PAD, "<|pad|>"))
    ]
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": None,
        "pre_tokenizer": level,
        "post_processor": None,
        "decoder": {**level, "type": "ByteLevel"},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [],
        },
    }


def config() -> dict:
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HIDDEN // HEADS,
        "vocab_size": VOCAB,
        "max_position_embeddings": MAX_LEN,
        "max_window_layers": LAYERS,
        "use_sliding_window": False,
        "sliding_window": None,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "initializer_range": 0.02,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "dtype": "bfloat16",
        "bos_token_id": EOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "attention_dropout": 0.0,
        "use_cache": True,
    }


def write_tiny_model(folder: str | Path, seed: int = 0) -> Path:
    """Write the tiny model into ``folder`` (created); returns it. Takes ~0.1 s."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config(), indent=1))
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": EOS, "eos_token_id": EOS, "pad_token_id": PAD})
    )
    _safetensors(out / "model.safetensors", seed)
    for name, text in tokenizer_files().items():
        (out / name).write_text(text)
    return out


def tokenizer_files() -> dict[str, str]:
    """The byte-level tokenizer's files (name → text): 256 byte tokens, EOS 256, PAD 257."""
    return {
        "tokenizer.json": json.dumps(_tokenizer()),
        "tokenizer_config.json": json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "eos_token": "<|endoftext|>",
                "pad_token": "<|pad|>",
                "bos_token": None,
                "unk_token": None,
                "padding_side": "left",
                "model_max_length": MAX_LEN,
                "clean_up_tokenization_spaces": False,
            }
        ),
        "special_tokens_map.json": json.dumps({"eos_token": "<|endoftext|>", "pad_token": "<|pad|>"}),
    }
