"""Which model the probe runs: the user's architecture at reduced depth, or the generic one.

When the user's ``config.json`` is on this machine (a local directory or the Hugging Face
cache; nothing is downloaded), the probe model keeps what vLLM's kernels and TRL's code paths
depend on — architecture class and ``model_type``, hidden size, attention and KV heads, head
dim, vocabulary, rope settings, max positions, tied embeddings, dtype, sliding windows — and
cuts only the depth (at least one layer of each kind the model has), the number of routed
experts and a vision tower's depth; past the parameter budget also the MLP, then the vocabulary
(the byte-level tokenizer then), then the width (fewer heads of the same head dim), each said in
``deviations``; a shape that no cut brings within it runs the generic model. Random weights
are written by ``model_writer.py`` in the training environment. Without a config, the generic
tiny model (``tinymodel.py``) runs.

Pure functions of the config: the stdlib only, no torch in envdoctor's process.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envdoctor.coerce import as_int
from envdoctor.errors import InputError, read_input_text
from envdoctor.plan.memory.shape import MAX_CONFIG_BYTES, find_config
from envdoctor.script_args import parse_script_args

if TYPE_CHECKING:
    from envdoctor.plan.interface import Launch

#: depth of the probe model: one layer is enough for every kernel; two keep a residual path
#: between layers (and the first/last layer special cases some families have)
PROBE_LAYERS = 2
#: routed experts kept per MoE layer (at least the experts each token is routed to)
PROBE_EXPERTS = 8
#: past this many parameters the MLP is narrowed, then the vocabulary cut, then the width (heads
#: of the user's head_dim) reduced; a shape that still does not fit runs the generic model
PARAM_BUDGET = 1_500_000_000
#: the smallest vocabulary a cut leaves: the byte-level tokenizer's 258 ids, rounded up
MIN_VOCAB = 512
_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
_TOPK_KEYS = ("num_experts_per_tok", "num_experts_per_token", "moe_topk")
_VISION_DEPTH = ("depth", "num_hidden_layers", "num_layers")
#: tokenizer files copied from the user's snapshot (the probe never downloads one)
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
)


@dataclass
class ProbeModel:
    """The model the probe will run and how it differs from the user's."""

    source: str  # "generic", or the config.json it copies
    config: dict[str, Any] | None = None  # the reduced config (None: generic)
    tokenizer_dir: str | None = None  # the user's tokenizer files, when cached with the config
    name: str = ""  # the user's model name or path
    deviations: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)  # the report's probe.model

    @property
    def faithful(self) -> bool:
        return self.config is not None


def user_model_name(
    config: dict[str, Any], server: Launch | None = None, trainer: Launch | None = None
) -> str | None:
    """The model the run trains: the config's ``model_name_or_path``, else the trainer's or the
    server's ``--model`` / ``--model_name_or_path`` flag."""
    value = config.get("model_name_or_path")
    if isinstance(value, str) and value.strip():
        return value.strip()
    for launch in (trainer, server):
        if launch is None:
            continue
        args = list(launch.script_args)
        if launch.launcher == "vllm-serve" and args and not args[0].startswith("-"):
            return args[0]  # vllm serve MODEL
        opts = {**parse_script_args(args), **launch.options}
        for key in ("model_name_or_path", "model"):
            if isinstance(opts.get(key), str) and opts[key].strip():
                return str(opts[key]).strip()
    return None


def _positive(value: Any) -> int | None:
    """A positive JSON integer of ``config.json`` (a string or a float is not one), else None."""
    return as_int(value, low=1, strict=True)


def _first(cfg: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, int | None]:
    for key in keys:
        if _positive(cfg.get(key)) is not None:
            return key, int(cfg[key])
    return None, None


def _reduce_layers(cfg: dict[str, Any], notes: list[str], where: str) -> None:
    key, layers = _first(cfg, _LAYER_KEYS)
    if key is None or layers is None:
        return
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers and types:
        kinds = list(dict.fromkeys(str(t) for t in types))  # every kind of layer, in order
        keep = max(len(kinds), min(PROBE_LAYERS, layers))
        picked = [types[i] for i in sorted({types.index(k) for k in kinds})]
        while len(picked) < keep:
            picked.append(types[len(picked) % len(types)])
        cfg["layer_types"] = picked
    else:
        keep = min(PROBE_LAYERS, layers)
    cfg[key] = keep
    if _positive(cfg.get("max_window_layers")) is not None and cfg["max_window_layers"] > keep:
        cfg["max_window_layers"] = keep  # Qwen2: layers from this index use sliding windows
    if _positive(cfg.get("first_k_dense_replace")) is not None and keep > 1:
        cfg["first_k_dense_replace"] = min(cfg["first_k_dense_replace"], 1)  # one dense, one MoE
    if isinstance(cfg.get("mlp_only_layers"), list):
        cfg["mlp_only_layers"] = [i for i in cfg["mlp_only_layers"] if isinstance(i, int) and i < keep]
    if keep < layers:
        notes.append(f"{where}{keep} of {layers} layers")


def _reduce_experts(cfg: dict[str, Any], notes: list[str], where: str) -> None:
    key, experts = _first(cfg, _EXPERT_KEYS)
    if key is None or experts is None:
        return
    _, topk = _first(cfg, _TOPK_KEYS)
    keep = max(min(PROBE_EXPERTS, experts), topk or 1)
    if keep < experts:
        cfg[key] = keep
        notes.append(f"{where}{keep} of {experts} routed experts (top-{topk or '?'} kept)")
    groups = _positive(cfg.get("n_group"))
    if groups and keep % groups:  # DeepSeek's grouped routing needs experts in whole groups
        cfg["n_group"], cfg["topk_group"] = 1, 1


def _reduce_vision(cfg: dict[str, Any], notes: list[str]) -> None:
    vision = cfg.get("vision_config")
    if not isinstance(vision, dict):
        return
    key, depth = _first(vision, _VISION_DEPTH)
    if key is None or depth is None or depth <= 1:
        return
    vision[key] = 1
    for listed in ("fullatt_block_indexes", "deepstack_visual_indexes"):
        if isinstance(vision.get(listed), list):
            vision[listed] = [0] if vision[listed] else []
    notes.append(f"vision tower: 1 of {depth} blocks")


def _params(cfg: dict[str, Any]) -> int:
    """A rough parameter count of the reduced text model (embeddings, attention, MLP)."""
    hidden = _positive(cfg.get("hidden_size")) or 0
    vocab = _positive(cfg.get("vocab_size")) or 0
    heads = _positive(cfg.get("num_attention_heads")) or 1
    kv = _positive(cfg.get("num_key_value_heads")) or heads
    head_dim = _positive(cfg.get("head_dim")) or max(hidden // heads, 1)
    _, layers = _first(cfg, _LAYER_KEYS)
    _, experts = _first(cfg, _EXPERT_KEYS)
    inter = _positive(cfg.get("moe_intermediate_size")) if experts else None
    inter = inter or _positive(cfg.get("intermediate_size")) or 4 * hidden
    mlp = 3 * hidden * inter * (experts or 1)
    attn = hidden * head_dim * (2 * heads + 2 * kv)
    tied = cfg.get("tie_word_embeddings", False) is True
    return vocab * hidden * (1 if tied else 2) + (layers or 1) * (attn + mlp)


def _narrow(cfg: dict[str, Any], notes: list[str], where: str) -> None:
    """Narrow the MLP (never the attention, embedding or vocabulary) past the budget."""
    if _params(cfg) <= PARAM_BUDGET:
        return
    hidden = _positive(cfg.get("hidden_size")) or 0
    for key in ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size"):
        value = _positive(cfg.get(key))
        if value and hidden and value > hidden:
            cfg[key] = hidden
            notes.append(f"{where}{key} {hidden} instead of {value} (the probe's size budget)")


def _cut_vocabulary(cfg: dict[str, Any], notes: list[str], where: str) -> None:
    """Past the budget: the vocabulary cut to what fits beside the rest (a multiple of 128, at
    least ``MIN_VOCAB``); the user's tokenizer then cannot be used (its ids would not fit)."""
    vocab, hidden = _positive(cfg.get("vocab_size")), _positive(cfg.get("hidden_size"))
    if _params(cfg) <= PARAM_BUDGET or not vocab or not hidden or vocab <= MIN_VOCAB:
        return
    rest = _params({**cfg, "vocab_size": 0})
    room = (PARAM_BUDGET - rest) // (hidden * (1 if cfg.get("tie_word_embeddings", False) is True else 2))
    keep = max(MIN_VOCAB, room // 128 * 128)
    if keep < vocab:
        cfg["vocab_size"] = keep
        notes.append(
            f"{where}vocab_size {keep} instead of {vocab} (the probe's size budget; a byte-level "
            "tokenizer, as the model's own ids would not fit)"
        )


def _cut_width(cfg: dict[str, Any], notes: list[str], where: str) -> None:
    """Past the budget still: fewer attention heads of the user's head_dim (KV heads dividing
    them), the hidden size theirs, the MLP no wider than it."""
    hidden = _positive(cfg.get("hidden_size"))
    heads = _positive(cfg.get("num_attention_heads")) or 1
    if _params(cfg) <= PARAM_BUDGET or not hidden:
        return
    kv = _positive(cfg.get("num_key_value_heads")) or heads
    head_dim = _positive(cfg.get("head_dim")) or max(hidden // heads, 1)
    mlp_keys = ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size")
    trial: dict[str, Any] = cfg
    lo, hi = 1, heads  # the most heads that fit: the parameters grow with them
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _params(_narrowed(cfg, mid, kv, head_dim, mlp_keys)) <= PARAM_BUDGET:
            lo = mid
        else:
            hi = mid - 1
    trial = _narrowed(cfg, lo, kv, head_dim, mlp_keys)
    if trial["hidden_size"] >= hidden and trial["num_attention_heads"] >= heads:
        return
    cfg.update(trial)
    notes.append(
        f"{where}hidden_size {trial['hidden_size']} instead of {hidden} ({lo} of {heads} attention "
        f"heads of {head_dim}, {trial.get('num_key_value_heads')} KV heads: the probe's size budget)"
    )


def _narrowed(
    cfg: dict[str, Any], heads: int, kv: int, head_dim: int, mlp_keys: tuple[str, ...]
) -> dict[str, Any]:
    """``cfg`` with ``heads`` heads of ``head_dim`` (the hidden size theirs)."""
    k = min(kv, heads)
    while heads % k:
        k -= 1
    hidden = heads * head_dim
    out = {**cfg, "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": k}
    if "head_dim" in cfg:
        out["head_dim"] = head_dim
    for key in mlp_keys:
        value = _positive(cfg.get(key))
        if value and value > hidden:
            out[key] = hidden
    return out


def over_budget(cfg: dict[str, Any]) -> bool:
    """Whether the reduced config (its language model) is still past ``PARAM_BUDGET``."""
    return _params(_text(cfg)) > PARAM_BUDGET or _params(cfg) > PARAM_BUDGET


def reduce_config(user: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The probe model's config from the user's, and what was cut. Nested language-model
    configs (``text_config`` of vision-language models) are cut the same way."""
    cfg = copy.deepcopy(user)
    notes: list[str] = []
    text = cfg.get("text_config")
    targets = [(cfg, "")]
    if isinstance(text, dict):
        targets = [(text, "")] + ([(cfg, "")] if _first(cfg, _LAYER_KEYS)[0] else [])
    for target, where in targets:
        _reduce_layers(target, notes, where)
        _reduce_experts(target, notes, where)
        _narrow(target, notes, where)
        _cut_vocabulary(target, notes, where)
        _cut_width(target, notes, where)
    _reduce_vision(cfg, notes)
    for key in ("quantization_config", "auto_map"):  # random bf16 weights; no remote code
        if key in cfg:
            cfg.pop(key)
            notes.append(f"without its {key} (random {cfg.get('torch_dtype') or 'bf16'} weights)")
    return cfg, notes


def _text(cfg: dict[str, Any]) -> dict[str, Any]:
    inner = cfg.get("text_config")
    return inner if isinstance(inner, dict) else cfg


def describe(cfg: dict[str, Any], user: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report's ``probe.model`` fields of ``cfg`` (and the user's depth beside it)."""
    text = _text(cfg)
    heads = _positive(text.get("num_attention_heads"))
    hidden = _positive(text.get("hidden_size"))
    arch = cfg.get("architectures")
    out: dict[str, Any] = {
        "architecture": arch[0] if isinstance(arch, list) and arch else None,
        "model_type": cfg.get("model_type"),
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "kv_heads": _positive(text.get("num_key_value_heads")) or heads,
        "head_dim": _positive(text.get("head_dim")) or (hidden // heads if hidden and heads else None),
        "vocab_size": _positive(text.get("vocab_size")),
        "max_position_embeddings": _positive(text.get("max_position_embeddings")),
        "layers": _first(text, _LAYER_KEYS)[1],
    }
    if user is not None:
        out["user_layers"] = _first(_text(user), _LAYER_KEYS)[1]
    return out


def _tokenizer_dir(config_path: Path) -> str | None:
    folder = config_path.parent
    return (
        str(folder)
        if (folder / "tokenizer.json").is_file() or (folder / "tokenizer.model").is_file()
        else None
    )


def choose(name: str | None, environ: dict[str, str] | None = None) -> ProbeModel:
    """The probe model for the user's model ``name`` (a directory or a hub id): its config's
    shape when the config is on this machine, else the generic model, saying why."""
    from envdoctor.probe.plan.tinymodel import config as generic_config

    generic = ProbeModel(
        source="generic", name=name or "", summary={"source": "generic", **describe(generic_config())}
    )
    if not name:
        generic.deviations.append("no model named (model_name_or_path): the generic tiny model")
        return generic
    path = find_config(name, environ)
    if path is None:
        generic.deviations.append(
            f"the config of {name} is not on this machine (no download): the generic tiny model"
        )
        return generic
    try:
        user = json.loads(read_input_text(path, f"model config {path}", MAX_CONFIG_BYTES))
    except (InputError, ValueError, RecursionError):
        generic.deviations.append(f"{path} is not a readable JSON config: the generic tiny model")
        return generic
    if not isinstance(user, dict) or not isinstance(_text(user).get("hidden_size"), int):
        generic.deviations.append(f"{path} has no hidden_size: the generic tiny model")
        return generic
    reduced, notes = reduce_config(user)
    if over_budget(reduced):
        generic.deviations.append(
            f"{path}: no cut of its depth, experts, MLP, vocabulary or heads brings it within the "
            f"probe's size budget ({PARAM_BUDGET:,} parameters): the generic tiny model"
        )
        return generic
    tokenizer = _tokenizer_dir(path)
    if _text(reduced).get("vocab_size") != _text(user).get("vocab_size"):
        tokenizer = None  # the model's own token ids would not fit the cut vocabulary
    elif tokenizer is None:
        notes.append("a byte-level tokenizer (the model's own is not cached beside its config)")
    model = ProbeModel(source=str(path), config=reduced, tokenizer_dir=tokenizer, name=name, deviations=notes)
    model.summary = {
        "source": str(path),
        **describe(reduced, user),
        "tokenizer": "the model's own" if tokenizer else "byte-level",
        "deviations": notes,
    }
    return model
