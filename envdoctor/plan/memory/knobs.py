"""The knobs that size a GRPO run's memory, read from the GRPO config, the accelerate / DeepSpeed /
FSDP setup and the installed TRL's defaults (each default cited where it is applied).

TRL defaults, read in ``trl/trainer/grpo_config.py`` at the tags:
- ``beta`` 0.04 up to v0.18.x, 0.0 from v0.19.0 (no reference model by default);
- ``gradient_checkpointing`` True from v0.22.0, ``bf16`` = not ``fp16`` from v0.19.0
  (transformers' False before);
- ``max_completion_length`` 256, 512 from v1.10.0; ``max_prompt_length`` 512, None from v0.26.0
  (prompts are not truncated: 512 is then an assumption);
- ``num_generations`` 8; ``per_device_train_batch_size`` transformers' 8;
  ``steps_per_generation`` = ``gradient_accumulation_steps``;
- ``vllm_gpu_memory_utilization`` 0.9 up to v0.17, 0.3 from v0.18.0; ``vllm_mode`` server from
  v0.18.0, colocate from v1.0.0;
- the model is loaded in float32 unless ``model_init_kwargs`` names a dtype
  (``create_model_from_path``; v1.x docstring "defaults to float32");
- the per-token log-probs: full ``(batch, completion, vocab)`` logits and ``selective_log_softmax``
  up to v1.14.x; from v1.15.0 a fused, chunked LM head (``add_fused_lm_head``, 4096-token ×
  32768-vocab tiles) that never materializes them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from envdoctor.coerce import as_int
from envdoctor.plan.values import as_bool
from envdoctor.versions import at_least

_DTYPES = {"float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2}
_LORA_DEFAULT = ("q_proj", "v_proj")  # PEFT's default target modules for Llama / Qwen / Mistral


@dataclass
class Knobs:
    """One run's memory-relevant settings, resolved (``assumed`` lists defaults taken)."""

    batch: int = 8  # per_device_train_batch_size
    grad_accum: int = 1
    prompt_len: int = 512
    prompt_source: str = "assumed"  # max_prompt_length | --prompt-tokens | vllm_max_model_length...
    completion_len: int = 256
    num_generations: int = 8
    steps_per_generation: int = 1
    gradient_checkpointing: bool = False
    weight_bytes: int = 4  # the trained model's parameter dtype
    compute_bytes: int = 2  # autocast dtype (bf16/fp16), 4 without mixed precision
    beta: float = 0.0
    optim: str = "adamw_torch_fused"
    lora: bool = False
    lora_r: int = 16
    lora_targets: tuple[str, ...] = _LORA_DEFAULT
    load_in_4bit: bool = False
    load_in_8bit: bool = False
    strategy: str = "ddp"  # ddp | zero1 | zero2 | zero3 | fsdp_full | fsdp_grad_op | fsdp_hybrid
    offload_optimizer: bool = False
    offload_params: bool = False
    offload_device: str = "cpu"  # cpu | nvme (DeepSpeed's offload_*_device)
    world: int = 1  # data-parallel ranks
    node_ranks: int = 1  # ranks on one node (hybrid shard group)
    fused_logps: bool = False  # TRL >= 1.15
    use_vllm: bool = False
    vllm_mode: str | None = None
    vllm_util: float = 0.3
    vllm_sleep: bool = False
    vllm_tp: int = 1
    vllm_max_model_len: int | None = None
    vllm_enforce_eager: bool = False
    ds3_gather: bool = True  # ds3_gather_for_generation: ZeRO-3 gathers the model to generate
    # vLLM 0.8.0-0.9.0 (V1): the fraction caps the whole process as it stood at vLLM's start
    # (rules/knowledge/vllm.yaml gpu_memory_utilization_scope); later: vLLM's own budget
    vllm_caps_process: bool = False
    trl: str | None = None
    assumed: list[str] = field(default_factory=list)
    #: the keys of ``MEMORY_KEYS`` the training script computes (``Plan.computed``): planned at
    #: TRL's default, which is not the run's value; rules that judge the plan stay quiet then
    computed: tuple[str, ...] = ()

    def replace(self, **changes: Any) -> Knobs:
        return dataclasses.replace(self, assumed=list(self.assumed), **changes)

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.completion_len

    @property
    def sharded(self) -> bool:
        return self.strategy in ("zero3", "fsdp_full", "fsdp_hybrid")


#: the GRPO config keys the plan reads (``from_config``)
MEMORY_KEYS = (
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "steps_per_generation",
    "num_generations",
    "max_completion_length",
    "max_prompt_length",
    "gradient_checkpointing",
    "bf16",
    "fp16",
    "beta",
    "optim",
    "use_peft",
    "lora_r",
    "lora_target_modules",
    "load_in_4bit",
    "load_in_8bit",
    "use_vllm",
    "ds3_gather_for_generation",
    "vllm_gpu_memory_utilization",
    "vllm_enable_sleep_mode",
    "vllm_tensor_parallel_size",
    "vllm_max_model_length",
    "vllm_max_model_len",
)

MAX_COUNT = 10**7  # batch sizes, lengths, ranks: beyond any real run (CFG rules judge values)


def _count(value: Any, default: int) -> int:
    """A count of the config (batch, lengths, ranks) in ``[1, MAX_COUNT]``, else ``default``."""
    return as_int(value, default, low=1, high=MAX_COUNT)


def _table(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    """``mapping[key]`` when it is a mapping, else an empty one."""
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def number(value: Any, default: float, limit: float = 1e6) -> float:
    """``value`` as a number in ``[0, limit]``; ``default`` for anything else."""
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return out if 0.0 <= out <= limit else default


def dtype_bytes(value: Any) -> int | None:
    return _DTYPES.get(str(value).lower().replace("torch.", "")) if value is not None else None


def from_config(
    config: dict[str, Any],
    trl: str | None,
    checkpoint_dtype: str | None,
    accelerate: dict[str, Any] | None = None,
    launch_opts: dict[str, Any] | None = None,
    world: int = 1,
    node_ranks: int = 1,
    vllm_mode: str | None = None,
    torch: str | None = None,
    prompt_tokens: int | None = None,
    server_max_model_len: int | None = None,
) -> Knobs:
    """Resolve the knobs of one run; ``assumed`` notes each TRL default taken.
    ``prompt_tokens``: the prompt length the user states (``plan-memory --prompt-tokens``);
    ``server_max_model_len``: the ``--max_model_len`` of the run's ``trl vllm-serve`` line."""
    c = config
    k = Knobs(trl=trl, world=max(world, 1), node_ranks=max(node_ranks, 1), vllm_mode=vllm_mode)

    def pick(key: str, default: Any, why: str) -> Any:
        if key in c and c[key] is not None:
            return c[key]
        k.assumed.append(f"{key}={default} ({why})")
        return default

    k.batch = _count(pick("per_device_train_batch_size", 8, "transformers' default"), 8)
    k.grad_accum = _count(c.get("gradient_accumulation_steps"), 1)
    k.steps_per_generation = _count(c.get("steps_per_generation"), k.grad_accum)
    k.num_generations = _count(c.get("num_generations"), 8)
    mcl = 512 if at_least(trl, "1.10.0") else 256
    k.completion_len = _count(pick("max_completion_length", mcl, f"TRL {trl or '?'} default"), mcl)
    _prompt(k, c, trl, prompt_tokens, server_max_model_len if vllm_mode == "server" else None)
    # GRPOConfig's own defaults (rules/knowledge/grpo_config_keys.yaml, read at the tags):
    # gradient_checkpointing=True from TRL 0.22.0; bf16 = not fp16 from 0.19.0
    gc_default = bool(at_least(trl, "0.22.0"))
    k.gradient_checkpointing = bool(as_bool(c.get("gradient_checkpointing", gc_default)))
    bf16_default = bool(at_least(trl, "0.19.0")) and not as_bool(c.get("fp16", False))
    bf16 = as_bool(c.get("bf16", bf16_default)) or as_bool(c.get("fp16", False))
    k.compute_bytes = 2 if bf16 else 4
    beta_default = 0.04 if at_least(trl, "0.19.0") is False else 0.0
    k.beta = number(c.get("beta", beta_default), beta_default)
    # transformers' default optim: the fused AdamW with torch >= 2.8, the foreach one before
    fused = at_least(torch, "2.8.0") is not False
    k.optim = str(c.get("optim") or ("adamw_torch_fused" if fused else "adamw_torch")).lower()
    k.weight_bytes = _weight_bytes(c, checkpoint_dtype)
    k.lora = bool(as_bool(c.get("use_peft", False)))
    k.lora_r = _count(c.get("lora_r"), 16)
    targets = c.get("lora_target_modules")
    if isinstance(targets, str):
        targets = [t for t in targets.replace(",", " ").split() if t]
    if isinstance(targets, list) and targets:
        k.lora_targets = tuple(str(t) for t in targets)
    k.load_in_4bit = bool(as_bool(c.get("load_in_4bit", False)))
    k.load_in_8bit = bool(as_bool(c.get("load_in_8bit", False)))
    k.fused_logps = bool(at_least(trl, "1.15.0"))
    _distributed(k, c, accelerate or {}, launch_opts or {})
    k.use_vllm = bool(as_bool(c.get("use_vllm", False)))
    k.ds3_gather = bool(as_bool(c.get("ds3_gather_for_generation", True)))
    util_default = 0.9 if at_least(trl, "0.18.0") is False else 0.3
    k.vllm_util = number(c.get("vllm_gpu_memory_utilization", util_default), util_default)
    if not 0.0 < k.vllm_util <= 1.0:
        k.vllm_util = util_default
    k.vllm_sleep = bool(as_bool(c.get("vllm_enable_sleep_mode", False)))
    k.vllm_tp = _count(c.get("vllm_tensor_parallel_size"), 1)
    mml = c.get("vllm_max_model_length", c.get("vllm_max_model_len"))
    k.vllm_max_model_len = _count(mml, 0) or None
    return k


def _prompt(
    k: Knobs, c: dict[str, Any], trl: str | None, prompt_tokens: int | None, server_mml: int | None
) -> None:
    """The prompt length the run really uses, and where it comes from (``k.prompt_source``):
    ``max_prompt_length`` where the config sets it (TRL < 0.26 truncates to it; TRL 1.x refuses
    the key, CFG001); else ``--prompt-tokens``; else ``vllm_max_model_length`` less
    ``max_completion_length`` (a server's ``--max_model_len`` in server mode: vLLM refuses a
    longer prompt, so it bounds what the run sees);
    else 512, an assumption (TRL's default before 0.26; from 0.26 prompts are not truncated)."""
    if c.get("max_prompt_length") is not None and _count(c["max_prompt_length"], 0):
        k.prompt_len, k.prompt_source = _count(c["max_prompt_length"], 512), "max_prompt_length"
        return
    if prompt_tokens:
        k.prompt_len, k.prompt_source = prompt_tokens, "--prompt-tokens"
        return
    key = "--max_model_len" if server_mml else "vllm_max_model_length"
    mml = server_mml or _count(c.get("vllm_max_model_length", c.get("vllm_max_model_len")), 0)
    if as_bool(c.get("use_vllm", False)) and mml > k.completion_len:
        k.prompt_len = mml - k.completion_len
        k.prompt_source = f"{key} {mml} - max_completion_length {k.completion_len}"
        return
    untruncated = at_least(trl, "0.26.0")  # max_prompt_length defaults to None from 0.26.0
    why = (
        "TRL's default before 0.26; from 0.26 prompts are not truncated: plan-memory "
        "--prompt-tokens N plans for your prompts"
        if untruncated
        else "TRL's default"
    )
    k.prompt_len, k.prompt_source = 512, "assumed"
    k.assumed.append(f"max_prompt_length=512 ({why})")


def _weight_bytes(c: dict[str, Any], checkpoint_dtype: str | None) -> int:
    init = _table(c, "model_init_kwargs")
    for value in (init.get("dtype"), init.get("torch_dtype"), c.get("dtype"), c.get("torch_dtype")):
        if value == "auto":
            return dtype_bytes(checkpoint_dtype) or 2
        found = dtype_bytes(value)
        if found:
            return found
    return 4  # create_model_from_path: float32 unless told


def _distributed(k: Knobs, c: dict[str, Any], acc: dict[str, Any], opts: dict[str, Any]) -> None:
    """ZeRO stage / FSDP strategy and offload from the accelerate config, the launch flags or
    the GRPO config's ``deepspeed`` / ``fsdp`` keys."""
    ds = _table(acc, "deepspeed_config")
    ds_inline = _table(c, "deepspeed")
    zero = _table(ds_inline, "zero_optimization")
    dist = str(acc.get("distributed_type", "")).upper()
    stage = opts.get("zero_stage", ds.get("zero_stage", zero.get("stage")))
    if stage is not None or dist == "DEEPSPEED" or opts.get("use_deepspeed") or ds_inline:
        s = _count(stage, 0) if str(stage) != "0" else 0
        k.strategy = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}.get(s, "zero2")
        if s == 0 and stage is None:
            k.strategy = "zero2"
            k.assumed.append("ZeRO stage 2 (DeepSpeed without a stage read)")
        off_opt = opts.get("offload_optimizer_device", ds.get("offload_optimizer_device")) or (
            (zero.get("offload_optimizer") or {}).get("device")
            if isinstance(zero.get("offload_optimizer"), dict)
            else None
        )
        off_par = opts.get("offload_param_device", ds.get("offload_param_device")) or (
            (zero.get("offload_param") or {}).get("device")
            if isinstance(zero.get("offload_param"), dict)
            else None
        )
        k.offload_optimizer = str(off_opt).lower() in ("cpu", "nvme")
        k.offload_params = str(off_par).lower() in ("cpu", "nvme") and k.strategy == "zero3"
        if "nvme" in (str(off_opt).lower(), str(off_par).lower()):
            k.offload_device = "nvme"
        return
    fsdp = _table(acc, "fsdp_config")
    cfg_fsdp = str(c.get("fsdp") or "")
    if dist == "FSDP" or opts.get("use_fsdp") or cfg_fsdp:
        raw = str(
            opts.get("fsdp_sharding_strategy", fsdp.get("fsdp_sharding_strategy", cfg_fsdp or "FULL_SHARD"))
        ).upper()
        if as_bool(fsdp.get("fsdp_reshard_after_forward", True)) is False:
            raw = "SHARD_GRAD_OP"
        if "HYBRID" in raw or raw in ("4", "5"):
            k.strategy = "fsdp_hybrid"
        elif "GRAD_OP" in raw or raw == "2":
            k.strategy = "fsdp_grad_op"
        elif "NO_SHARD" in raw or raw == "3":
            k.strategy = "ddp"
        else:
            k.strategy = "fsdp_full"
        offload = opts.get("fsdp_offload_params", fsdp.get("fsdp_offload_params", "offload" in cfg_fsdp))
        k.offload_params = k.offload_optimizer = bool(as_bool(offload))
