"""Turn the resolved layout into a ``ProbeSpec``: the user's launcher, with the worker as script."""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from envdoctor.net_policy import LOOPBACK_ONLY
from envdoctor.plan.interface import DEFAULT_SERVER_HOST, Launch
from envdoctor.plan.values import as_bool
from envdoctor.plan.visible_devices import resolve_visible
from envdoctor.probe.interface import ProbeSpec
from envdoctor.probe.plan.model_source import choose, user_model_name
from envdoctor.probe.plan.rendezvous import remote_rendezvous
from envdoctor.probe.plan.user_batch import user_inputs

if TYPE_CHECKING:
    from envdoctor.checks.context import Context

_MODULE_FLAGS = {"-m", "--module"}


def launcher_argv(launch: Launch | None) -> list[str]:
    """The launcher part of the user's command, ready to take a script path."""
    if launch is None or launch.launcher in ("unknown", "env"):
        return [sys.executable]
    program = list(launch.program)
    if launch.launcher == "python":
        if launch.module:  # python -m pkg.train → python
            program = program[: program.index("-m")] if "-m" in program else program
        program = program or [sys.executable]
    else:
        program = [t for t in program if t not in _MODULE_FLAGS]
    if launch.launcher.startswith("trl-"):
        # `trl grpo` is accelerate launch around TRL's script: probe through accelerate
        program = ["accelerate", "launch"] + [
            tok
            for k, v in launch.options.items()
            if k in ("num_processes", "gpu_ids", "config_file", "main_process_port")
            for tok in (f"--{k}", str(v))
        ]
    head = program[0]
    if os.sep not in head and shutil.which(head) is None:
        local = os.path.join(os.path.dirname(sys.executable), head)
        if os.path.exists(local):  # console scripts of this venv, not on PATH
            program[0] = local
        elif head.startswith("python"):
            program[0] = sys.executable
    return program


#: The batch shape of the user's config is probed as given up to these sizes (the model is
#: tiny, so even the largest takes seconds); beyond them the probe keeps its own small shape.
SHAPE_LIMITS = {"num_generations": 64, "per_device_train_batch_size": 64, "gradient_accumulation_steps": 16}
SHAPE_DEFAULTS = {"num_generations": 2, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1}


def batch_shape(config: dict[str, Any]) -> tuple[dict[str, int], list[str]]:
    """The config's batch shape for the probe, and notes on what was left at the probe's own."""
    shape = dict(SHAPE_DEFAULTS)
    notes: list[str] = []
    given = {k: config[k] for k in SHAPE_DEFAULTS if k in config}
    if not given:
        return shape, notes
    try:
        values = {k: int(v) for k, v in given.items() if not isinstance(v, bool)}
    except (TypeError, ValueError):
        return shape, ["the config's batch shape is not numeric (CFG005): probed 2 × 2"]
    too_big = [f"{k}={v}" for k, v in values.items() if v > SHAPE_LIMITS[k]]
    if too_big or any(v < 1 for v in values.values()):
        return shape, [f"probed 2 × 2 instead of the config's {', '.join(too_big) or 'shape'}"]
    shape.update(values)
    return shape, notes


#: GRPOConfig's vLLM settings the probe passes on as the user gave them, per mode
VLLM_KEYS = {
    "colocate": (
        "vllm_gpu_memory_utilization",
        "vllm_tensor_parallel_size",
        "vllm_enable_sleep_mode",
        "vllm_model_impl",
        "vllm_max_model_length",
        "vllm_dtype",
    ),
    "legacy": ("vllm_device", "vllm_gpu_memory_utilization", "vllm_dtype", "vllm_max_model_len"),
    "server": (),
}


def _vllm_part(ctx: Context) -> dict[str, Any]:
    """ProbeSpec fields for the generation path the plan resolves to (empty: no vLLM)."""
    lay, plan, cfg = ctx.layout, ctx.plan, ctx.config
    mode = lay.generation_mode
    if not plan.use_vllm or mode not in VLLM_KEYS:
        return {}
    vllm = {k: cfg[k] for k in VLLM_KEYS[mode] if k in cfg}
    if "vllm_group_port" in cfg:
        vllm["vllm_group_port"] = cfg["vllm_group_port"]  # for naming it; the probe's is free
    out: dict[str, Any] = {
        "use_vllm": True,
        "vllm_mode": mode,
        "vllm": vllm,
        "trainer_visible": list(lay.visible),
    }
    if ctx.version("vllm") is None:  # what to install, said as `check` says it (PKG001)
        from envdoctor.checks.resolver import plan_fix

        fix, remedy = plan_fix(ctx, "vllm")
        if remedy is not None:
            out["vllm_install"] = fix
    if mode != "server":
        return out
    launch = plan.server
    env = dict(ctx.facts.env)
    if launch is not None:
        env.update(launch.env)
        out["server_launch"] = launch
    out["server_visible"] = resolve_visible(
        env.get("CUDA_VISIBLE_DEVICES"), ctx.facts.gpus, env.get("CUDA_DEVICE_ORDER")
    ).gpus
    srv = lay.server
    host = str(srv.host) if srv else str(cfg.get("vllm_server_host", DEFAULT_SERVER_HOST))
    address = LOOPBACK_ONLY.target(host).address  # the probe reads a server on loopback only
    if srv is not None and address is not None:
        out["user_server"] = (address, int(srv.port))
    return out


def multi_node(ctx: Context) -> str | None:
    """What the rendezvous of a launch line over several nodes would dial (None: one node)."""
    lay, trainer = ctx.layout, ctx.plan.trainer
    nodes = max(lay.num_machines, (trainer.nodes or 1) if trainer else 1)
    if nodes <= 1:
        return None
    env = {**ctx.facts.env, **(trainer.env if trainer else {})}
    return f"{remote_rendezvous(trainer, ctx.plan.accelerate, env)} for {nodes} nodes"


def peft_settings(config: dict[str, Any]) -> dict[str, Any] | None:
    """The LoRA a ``use_peft`` run trains, with TRL ModelConfig's defaults (r 16, alpha 32,
    dropout 0.05, PEFT's default target modules for the architecture), or None."""
    if not as_bool(config.get("use_peft", False)):
        return None
    out: dict[str, Any] = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": None}
    for key, name in (("lora_r", "r"), ("lora_alpha", "lora_alpha")):
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 4096:
            out[name] = value
    dropout = config.get("lora_dropout")
    if isinstance(dropout, (int, float)) and not isinstance(dropout, bool) and 0 <= dropout < 1:
        out["lora_dropout"] = float(dropout)
    targets = config.get("lora_target_modules")
    if isinstance(targets, str) and targets.strip():
        out["target_modules"] = (
            targets.strip()
            if targets.strip() == "all-linear"
            else [t.strip() for t in targets.split(",") if t.strip()]
        )
    elif isinstance(targets, list) and all(isinstance(t, str) for t in targets) and targets:
        out["target_modules"] = [t.strip() for t in targets if t.strip()][:64]
    return out


#: the distributions the probe imports (worker.STACK's modules), pinned in PRB009's fix when known
STACK_DISTS = ("torch", "transformers", "trl", "accelerate", "datasets")


def spec_from_context(ctx: Context, timeout_s: float = 180.0, steps: int = 1) -> ProbeSpec:
    """A probe of the plan in ``ctx`` (an ``envdoctor.checks.context.Context``): the user's
    launcher, GPUs, batch shape and precision, and the user's generation path (vLLM server,
    colocate or legacy) with the tiny model; ``use_vllm: false`` generates with TRL's own
    generate()."""
    lay = ctx.layout
    trainer = ctx.plan.trainer
    env = dict(trainer.env) if trainer else {}
    gen = [] if lay.generation_mode == "colocate" else list(lay.generation)
    shape, _ = batch_shape(ctx.config)
    name = user_model_name(ctx.config, ctx.plan.server, trainer)
    model = choose(name, {**os.environ, **env})
    return ProbeSpec(
        **user_inputs(ctx, model),
        **_vllm_part(ctx),
        model=model,
        multi_node=multi_node(ctx),
        launcher=launcher_argv(trainer),
        env=env,
        rank_gpus={r.rank: r.gpu for r in lay.ranks} if ctx.facts.gpus else {},
        generation_gpus=gen,
        gpu_uuids={g.index: g.uuid for g in ctx.facts.gpus},
        timeout_s=timeout_s,
        steps=steps,
        bf16=as_bool(ctx.config["bf16"]) if "bf16" in ctx.config else None,
        fp16=as_bool(ctx.config["fp16"]) if "fp16" in ctx.config else None,
        gradient_checkpointing=bool(as_bool(ctx.config.get("gradient_checkpointing", False))),
        peft=peft_settings(ctx.config),
        model_family="llama" if "llama" in str(ctx.config.get("model_name_or_path", "")).lower() else "qwen2",
        num_generations=shape["num_generations"],
        per_device_train_batch_size=shape["per_device_train_batch_size"],
        gradient_accumulation_steps=shape["gradient_accumulation_steps"],
        packages={n: v for n in STACK_DISTS if (v := ctx.version(n))},
    )
