"""A model's shape and parameter count from its ``config.json`` alone: no weights, no network.

The config is found in a local directory or the local Hugging Face cache
(``$HF_HUB_CACHE`` or ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``,
``models--org--name/snapshots/*/config.json``). Parameters are counted from the architecture as
transformers builds it (``modeling_<family>.py``): embeddings (+ an untied LM head), per layer the
attention projections with grouped-query K/V heads (Qwen2's q/k/v biases, ``attention_bias`` where
a family has the key), Qwen3's / Gemma3's per-head q/k norms, a gated MLP (gate, up, down) or MoE
experts with their router (and Qwen2-MoE's shared expert), and the RMSNorms.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envdoctor.errors import InputError, read_input_text
from envdoctor.units import billions

#: Families whose decoder is the Llama layout (gated MLP, RMSNorm, rotary attention).
FAMILIES = {
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "qwen2_moe",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "phi3",
    "mixtral",
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen3_vl_text",
    "qwen3_vl_moe",
    "qwen3_vl_moe_text",
}
# modeling_qwen2.py: q/k/v Linear(bias=True), o without (the VL decoders are Qwen2's)
_QKV_BIAS = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"}
_QK_NORM = {
    "qwen3",
    "qwen3_moe",
    "gemma3",
    "gemma3_text",
    "qwen3_vl",
    "qwen3_vl_text",
    "qwen3_vl_moe",
    "qwen3_vl_moe_text",
}
_FOUR_NORMS = {"gemma2", "gemma3", "gemma3_text"}  # pre/post attention and feed-forward norms
MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_DIM = 10**8  # no real layer count, width or vocabulary comes near


@dataclass
class ModelShape:
    """What the memory plan needs of a model; ``assumed`` notes what was not read from a config."""

    name: str
    family: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool = False
    qkv_bias: bool = False
    experts: int = 0  # routed experts per MoE layer (0: dense)
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    max_positions: int | None = None
    rope_factor: float = 1.0  # vLLM's derived length = base × factor (rope_scaling; see below)
    rope_base: int | None = None  # yarn: original_max_position_embeddings
    dtype: str | None = None  # torch_dtype / dtype of the checkpoint
    source: str = ""
    assumed: list[str] = field(default_factory=list)
    total_override: int | None = None  # --model-params: the user's count wins over the formula
    vision: int = 0  # parameters of a vision tower and its projector (0: text only)
    #: config.json's own model_type and architectures, and whether it names code of its own
    #: (auto_map: trust_remote_code): what transformers and vLLM look the model up by
    model_type: str = ""
    architectures: tuple[str, ...] = ()
    remote_code: bool = False

    # ---- counts -------------------------------------------------------------------------
    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def attention_params(self) -> int:
        h = self.hidden
        n = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        if self.qkv_bias:
            n += self.q_dim + 2 * self.kv_dim
        if self.family in _QK_NORM:
            n += 2 * self.head_dim
        return n

    def mlp_params(self, active: bool = False) -> int:
        h = self.hidden
        if not self.experts:
            return 3 * h * self.intermediate
        routed = self.experts_per_token if active else self.experts
        n = routed * 3 * h * self.expert_intermediate + h * self.experts  # experts + router
        if self.shared_expert_intermediate:
            n += 3 * h * self.shared_expert_intermediate + h  # shared expert + its gate
        return n

    def norm_params(self) -> int:
        return (4 if self.family in _FOUR_NORMS else 2) * self.hidden

    def layer_params(self, active: bool = False) -> int:
        return self.attention_params() + self.mlp_params(active) + self.norm_params()

    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    def total_params(self) -> int:
        if self.total_override:
            return self.total_override
        head = 0 if self.tied else self.embedding_params()
        return (
            self.embedding_params() + head + self.layers * self.layer_params() + self.hidden + self.vision
        )  # final norm, vision tower

    def active_params(self) -> int:
        """Parameters one token passes through (MoE: only the routed experts)."""
        if not self.experts:
            return self.total_params()
        head = 0 if self.tied else self.embedding_params()
        return (
            self.embedding_params()
            + head
            + self.layers * self.layer_params(active=True)
            + self.hidden
            + self.vision
        )

    def linear_params(self) -> int:
        """Weights of the decoder layers' Linear modules (what 4-bit quantization shrinks)."""
        return self.layers * (self.layer_params() - self.norm_params())

    def derived_max_len(self) -> int | None:
        """The longest max_model_len vLLM accepts without VLLM_ALLOW_LONG_MAX_MODEL_LEN:
        max_position_embeddings, times rope_scaling's factor for every rope type but su / longrope
        / llama3 (yarn: original_max_position_embeddings × factor; Gemma3 already scaled)
        (``_get_and_verify_max_len``, vllm/config.py v0.8.5)."""
        base = self.rope_base or self.max_positions
        return int(base * self.rope_factor) if base else None

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """K and V of one token over all layers: 2 × layers × kv_heads × head_dim × bytes."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes

    def kv_bytes_per_token_per_gpu(self, tp: int = 1, dtype_bytes: int = 2) -> int:
        """What one GPU of a tensor-parallel vLLM engine holds per token: each GPU keeps
        ``max(1, kv_heads / tp)`` KV heads, so past ``tp == kv_heads`` the heads are replicated
        (vLLM ``ModelConfig.get_num_kv_heads``; Qwen3-30B-A3B, 4 KV heads, at TP 8: twice the
        even split)."""
        tp = max(tp, 1)
        heads = -(-self.kv_heads // tp)  # ceil: vLLM needs one to divide the other
        return 2 * self.layers * heads * self.head_dim * dtype_bytes


def from_config(cfg: dict[str, Any], name: str = "", source: str = "") -> ModelShape:
    """A shape from a parsed ``config.json``; raises ``InputError`` for what it cannot count."""
    model_type = str(cfg.get("model_type", ""))
    if isinstance(cfg.get("text_config"), dict):  # multimodal wrappers (Gemma3ForConditionalGen.)
        inner = dict(cfg["text_config"])
        inner.pop("text_config", None)  # one level (a hostile chain would recurse per level)
        inner.pop("vision_config", None)
        inner.setdefault("model_type", model_type)
        inner.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings", True))
        for key in ("torch_dtype", "dtype"):
            if key in cfg:
                inner.setdefault(key, cfg[key])
        shape = from_config(inner, name, source)
        _add_vision(shape, cfg)
        return shape
    where = f"model config {source or name}"
    assumed: list[str] = []
    if model_type not in FAMILIES:
        assumed.append(f"model_type {model_type or '?'} counted as a Llama-like decoder")

    def num(*keys: str, default: int | None = None) -> int:
        for key in keys:
            value = cfg.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_DIM:
                return value
        if default is None:
            raise InputError(
                where, f"no usable {keys[0]} (a positive integer up to {MAX_DIM:,}) to size the model"
            )
        return default

    hidden = num("hidden_size", "n_embd", "d_model")
    heads = num("num_attention_heads", "n_head")
    head_dim = cfg.get("head_dim")
    if not (isinstance(head_dim, int) and 0 < head_dim <= MAX_DIM):
        head_dim = hidden // heads
    experts = (
        num("num_experts", "num_local_experts", "n_routed_experts", default=0)
        if any(k in cfg for k in ("num_experts", "num_local_experts", "n_routed_experts"))
        else 0
    )
    dense_inter = num("intermediate_size", "ffn_dim", default=4 * hidden)
    moe_inter = num("moe_intermediate_size", default=dense_inter) if experts else 0
    if experts and cfg.get("decoder_sparse_step", 1) not in (1, None):
        assumed.append("every layer counted as MoE (decoder_sparse_step ignored)")
    tied = cfg.get("tie_word_embeddings")
    if tied is None:
        tied = model_type.startswith("gemma")  # the family config class's default
    bias = model_type in _QKV_BIAS or bool(cfg.get("attention_bias"))
    dtype = cfg.get("torch_dtype") or cfg.get("dtype")
    factor, rope_base = _rope(cfg, model_type)
    shape = ModelShape(
        rope_factor=factor,
        rope_base=rope_base,
        name=name or str(cfg.get("_name_or_path", "")),
        family=model_type or "llama",
        layers=num("num_hidden_layers", "n_layer"),
        hidden=hidden,
        intermediate=dense_inter,
        heads=heads,
        kv_heads=num("num_key_value_heads", default=heads),
        head_dim=int(head_dim),
        vocab=num("vocab_size"),
        tied=bool(tied),
        qkv_bias=bias,
        experts=experts,
        experts_per_token=num("num_experts_per_tok", "num_experts_per_token", default=2) if experts else 0,
        expert_intermediate=moe_inter,
        shared_expert_intermediate=num("shared_expert_intermediate_size", default=0) if experts else 0,
        max_positions=num("max_position_embeddings", default=0) or None,
        dtype=str(dtype) if isinstance(dtype, str) else None,
        source=source,
        assumed=assumed,
    )
    _add_vision(shape, cfg)
    return shape


def _dim(cfg: dict[str, Any], *keys: str) -> int:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_DIM:
            return value
    return 0


def vision_params(vision: dict[str, Any], text_hidden: int) -> int:
    """Parameters of a vision tower and its projector into the decoder, from ``vision_config``.

    Per block: q, k, v and output projections (4·w²), the MLP (gate/up/down where the activation
    is SiLU, as Qwen2.5-VL's; fc1/fc2 otherwise: Qwen2-VL, Qwen3-VL, SigLIP, CLIP) and two norms;
    the patch embedding (channels × temporal patch × patch²× w), learned positions where the
    tower has a fixed ``image_size``, and the projector: Qwen's patch merger
    ((w·m²)² + w·m²·out, m the spatial merge size) or one linear map into the decoder's width.
    Qwen2-VL names the tower's width ``embed_dim`` and its output ``hidden_size``."""
    depth = _dim(vision, "depth", "num_hidden_layers", "num_layers")
    width = _dim(vision, "embed_dim", "hidden_size", "width")
    if not depth or not width:
        return 0
    inter = _dim(vision, "intermediate_size") or int(
        width * vision["mlp_ratio"]
        if isinstance(vision.get("mlp_ratio"), (int, float)) and 0 < vision["mlp_ratio"] <= 64
        else 4 * width
    )
    gated = str(vision.get("hidden_act", "")) in ("silu", "swiglu")
    block = 4 * width * width + (3 if gated else 2) * width * inter + 4 * width
    patch = _dim(vision, "patch_size") or 14
    channels = _dim(vision, "in_chans", "in_channels", "num_channels") or 3
    embed = channels * (_dim(vision, "temporal_patch_size") or 1) * patch * patch * width
    image = _dim(vision, "image_size")
    positions = (image // patch) ** 2 * width if image else 0
    out = (
        _dim(vision, "out_hidden_size")
        or (_dim(vision, "hidden_size") if "embed_dim" in vision else 0)
        or text_hidden
    )
    merge = _dim(vision, "spatial_merge_size")
    projector = (width * merge**2) ** 2 + width * merge**2 * out if merge else width * out
    return depth * block + embed + positions + projector


def _add_vision(shape: ModelShape, cfg: dict[str, Any]) -> None:
    """Count a vision tower (``vision_config``) into ``shape`` and say what is not planned."""
    vision = cfg.get("vision_config")
    if not isinstance(vision, dict) or shape.vision:
        return
    shape.vision = vision_params(vision, shape.hidden)
    if shape.vision:
        shape.assumed.append(
            f"vision tower counted ({shape.vision / 1e9:.2f}B parameters); image tokens are not in "
            "the prompt length (plan-memory --prompt-tokens N counts them)"
        )


# ---- finding the config -------------------------------------------------------------------
def _rope(cfg: dict[str, Any], model_type: str) -> tuple[float, int | None]:
    """(factor, yarn's original length) by which vLLM scales the derived max_model_len."""
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not isinstance(rope, dict) or "gemma3" in model_type:
        return 1.0, None
    kind = str(rope.get("rope_type", rope.get("type", "default")))
    if kind in ("su", "longrope", "llama3"):
        return 1.0, None
    factor = rope.get("factor", 1.0)
    factor = float(factor) if isinstance(factor, (int, float)) and 0 < factor <= 1e4 else 1.0
    base = rope.get("original_max_position_embeddings")
    base = base if kind == "yarn" and isinstance(base, int) and 0 < base <= MAX_DIM else None
    return factor, base


def hub_cache(environ: dict[str, str] | None = None) -> Path:
    """The Hugging Face hub cache, as huggingface_hub resolves it (constants.py)."""
    env = os.environ if environ is None else environ
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = env.get("HF_HOME") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return Path(home).expanduser() / "hub"


_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")


def find_config(model: str, environ: dict[str, str] | None = None) -> Path | None:
    """``config.json`` of a local directory or a cached hub model id, or None if not here."""
    try:
        return _find_config(model, environ)
    except (OSError, ValueError):  # a name too long for a path, a NUL byte, a permission
        return None


def _find_config(model: str, environ: dict[str, str] | None) -> Path | None:
    local = Path(model).expanduser()
    if (local / "config.json").is_file():
        return local / "config.json"
    if local.name == "config.json" and local.is_file():
        return local
    if not _REPO_ID.match(model):
        return None
    repo = hub_cache(environ) / ("models--" + model.replace("/", "--"))
    commit = _ref(repo / "refs" / "main")
    if commit and (repo / "snapshots" / commit / "config.json").is_file():
        return repo / "snapshots" / commit / "config.json"
    snapshots = (
        sorted((repo / "snapshots").glob("*/config.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        if (repo / "snapshots").is_dir()
        else []
    )
    return snapshots[0] if snapshots else None


_COMMIT = re.compile(r"[0-9a-f]{40}")
MAX_REF_BYTES = 256


def _ref(path: Path) -> str | None:
    """The commit hash a hub cache ref names: at most ``MAX_REF_BYTES`` of it are read
    (non-blocking), and it must be 40 hex digits (a 2 GiB ref was read whole: 22 s, 4 GiB)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, MAX_REF_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    commit = head.decode("ascii", errors="replace").strip()
    return commit if _COMMIT.fullmatch(commit) else None


def load_shape(model: str, environ: dict[str, str] | None = None) -> ModelShape | None:
    """The shape of ``model`` (a directory or a hub id) when its config is on this machine."""
    path = find_config(model, environ)
    if path is None:
        return None
    source = f"model config {path}"
    text = read_input_text(path, source, MAX_CONFIG_BYTES)
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # a number beyond Python's integer-string limit (4,300 digits)
        raise InputError(source, f"unreadable JSON: {str(exc)[:120]}") from None
    except RecursionError:
        raise InputError(source, "nested too deeply") from None
    if not isinstance(cfg, dict):
        raise InputError(source, "expected a JSON object")
    shape = from_config(cfg, name=model, source=str(path))
    archs = cfg.get("architectures")
    shape.model_type = str(cfg.get("model_type") or "")
    shape.architectures = tuple(a for a in archs if isinstance(a, str))[:8] if isinstance(archs, list) else ()
    shape.remote_code = bool(cfg.get("auto_map"))
    return shape


# ---- --model-params 7B ---------------------------------------------------------------------
_SIZE = re.compile(r"^\s*([\d.]+)\s*([kKmMbBtT]?)\s*$")
_SCALE = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
#: Representative dense shapes (Qwen2.5 configs) for a bare parameter count: layers, hidden,
#: intermediate, heads, kv heads, vocab, tied.
_REFERENCE = [
    (0.5e9, "Qwen2.5-0.5B", (24, 896, 4864, 14, 2, 151936, True)),
    (1.5e9, "Qwen2.5-1.5B", (28, 1536, 8960, 12, 2, 151936, True)),
    (3.1e9, "Qwen2.5-3B", (36, 2048, 11008, 16, 2, 151936, True)),
    (7.6e9, "Qwen2.5-7B", (28, 3584, 18944, 28, 4, 152064, False)),
    (14.8e9, "Qwen2.5-14B", (48, 5120, 13824, 40, 8, 152064, False)),
    (32.8e9, "Qwen2.5-32B", (64, 5120, 27648, 40, 8, 152064, False)),
    (72.7e9, "Qwen2.5-72B", (80, 8192, 29568, 64, 8, 152064, False)),
]


def parse_count(text: str) -> int:
    """``7B``, ``1.5b``, ``500M``, ``494032768`` → a parameter count; ``InputError`` if not."""
    m = _SIZE.match(str(text))
    if not m:
        raise InputError("--model-params", f"expected a count such as 7B or 1.5B, got {text!r}")
    try:
        value = float(m.group(1)) * _SCALE[m.group(2).lower()]
    except ValueError:
        raise InputError("--model-params", f"expected a count such as 7B, got {text!r}") from None
    if not 1e6 <= value <= 1e13:
        raise InputError("--model-params", f"{text!r} is not a plausible model size (1M–10T)")
    return int(value)


def shape_from_count(count: int) -> ModelShape:
    """A dense shape for a bare count: the nearest reference shape, the total the user's."""
    _, ref, (layers, hidden, inter, heads, kv, vocab, tied) = min(
        _REFERENCE, key=lambda r: abs(r[0] - count) / r[0]
    )
    return ModelShape(
        name=f"{billions(count, 1)} parameters",
        family="qwen2",
        layers=layers,
        hidden=hidden,
        intermediate=inter,
        heads=heads,
        kv_heads=kv,
        head_dim=hidden // heads,
        vocab=vocab,
        tied=tied,
        qkv_bias=True,
        source="--model-params",
        total_override=count,
        assumed=[
            f"layers, hidden size and vocabulary assumed like {ref} "
            "(no config.json: activations and KV cache are estimates)"
        ],
    )
