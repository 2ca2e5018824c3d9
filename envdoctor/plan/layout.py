"""Resolve a plan into a ``GpuLayout``: the physical GPU of every rank and of generation.

Semantics followed (sources in rules/layout.yaml):
- accelerate sets ``CUDA_VISIBLE_DEVICES`` to ``--gpu_ids`` (replacing the caller's value); without
  ``--num_processes`` or a config it starts one process per visible GPU;
- torchrun / deepspeed / several accelerate processes: rank ``i`` on node-local ``cuda:i``;
- one process without a distributed launcher sees every visible GPU (``n_gpu``), which is what
  makes ``transformers.Trainer`` wrap the model in ``nn.DataParallel``;
- legacy TRL (``vllm_device``): ``auto`` is ``cuda:<num_processes>`` of rank 0's visible GPUs;
- server mode: the GPUs of the ``trl vllm-serve`` process (tensor × data parallel);
- colocate mode: vLLM inside every training process, on its GPU.
"""

from __future__ import annotations

import re
from typing import Any

from envdoctor.errors import InputError
from envdoctor.facts.interface import Facts
from envdoctor.knowledge import Knowledge
from envdoctor.plan.interface import GpuLayout, Launch, Plan, Rank, ServerPlan
from envdoctor.plan.visible_devices import resolve_visible

_CUDA_INDEX = re.compile(r"^cuda:(\d+)$")
_SERVER_NAMES = ("vllm-serve", "vllm_serve", "vllm serve", "vllm.entrypoints")


MAX_PROCESSES = 4096  # per machine: more than any node has GPUs
MAX_MACHINES = 100_000


def _processes(launcher: str, flag: str, raw: Any, default: int | None,
               allowed: tuple[int, ...] = ()) -> int | None:
    """A process count from the launch (``default`` when absent or not a number); a count
    below 1 (other than the launcher's ``allowed`` specials) is bad input."""
    count = _int(raw)
    if count is None:
        return default
    if count < 1 and count not in allowed:
        raise InputError(f"launch command ({launcher})",
                         f"--{flag} {raw}: at least 1 process is needed")
    return count


def _int(value: Any, default: int | None = None) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def trainer_env(facts: Facts, launch: Launch | None) -> dict[str, str]:
    """The environment the trainer starts with: this shell's, then the launch line's prefix."""
    env = dict(facts.env)
    if launch is not None:
        env.update(launch.env)
    return env


def vllm_mode(plan: Plan, facts: Facts, kb: Knowledge) -> str | None:
    """How this TRL version reaches vLLM for this config: legacy, server, colocate or None."""
    if not plan.use_vllm:
        return None
    trl = facts.version("trl")
    if kb.feature("vllm_device_in_process", trl):
        return "legacy"
    has_modes = kb.feature("vllm_colocate_mode", trl)
    if has_modes:
        mode = plan.config.get("vllm_mode")
        if mode in ("server", "colocate"):
            return mode
        line = kb.trl_line(trl) or {}
        return line.get("default_vllm_mode") or "server"
    if has_modes is False:
        return "server"
    # TRL not installed or unknown: infer from the config's own keys
    if "vllm_device" in plan.config:
        return "legacy"
    return plan.config.get("vllm_mode") if plan.config.get("vllm_mode") in (
        "server", "colocate") else "colocate"


def resolve_layout(facts: Facts, plan: Plan, kb: Knowledge) -> GpuLayout:
    trainer = plan.trainer
    env = trainer_env(facts, trainer)
    order = env.get("CUDA_DEVICE_ORDER")
    lay = GpuLayout(launcher=trainer.launcher if trainer else "python")
    lay.gpus_known = bool(facts.gpus) or facts.nvml_error is None
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    seen = resolve_visible(cvd, facts.gpus, order)
    lay.visible = seen.gpus
    lay.visible_source = f"CUDA_VISIBLE_DEVICES={cvd}" if cvd is not None else "all GPUs"
    if seen.problem:
        lay.problems["visible"] = seen.problem
    opts = trainer.options if trainer else {}
    acc = plan.accelerate
    distributed = False
    node_rank = 0

    if lay.launcher == "accelerate" or lay.launcher.startswith("trl-"):
        gpu_ids = opts.get("gpu_ids", acc.get("gpu_ids"))
        if gpu_ids is not None and str(gpu_ids).strip().lower() != "all":
            ids = str(gpu_ids)
            chosen = resolve_visible(ids, facts.gpus, order)
            entries = [e.strip() for e in ids.split(",") if e.strip()]
            lay.visible = chosen.gpus
            lay.visible_source = f"--gpu_ids {ids} (accelerate sets CUDA_VISIBLE_DEVICES={ids})"
            if chosen.problem:
                lay.problems["gpu_ids"] = chosen.problem.replace("CUDA_VISIBLE_DEVICES", "gpu_ids")
            if len(set(entries)) != len(entries):
                lay.problems["gpu_ids"] = f"gpu_ids {ids} repeats a GPU"
        lay.num_machines = _int(opts.get("num_machines", acc.get("num_machines")), 1) or 1
        node_rank = _int(opts.get("machine_rank", acc.get("machine_rank")), 0) or 0
        total = _processes(lay.launcher, "num_processes",
                           opts.get("num_processes", acc.get("num_processes")), None)
        if total is None:
            total = max(len(lay.visible), 1) if not acc else 1
            lay.problems["num_processes_default"] = total
        lay.world_size = total
        lay.num_processes = max(total // max(lay.num_machines, 1), 1)
        dtype = str(acc.get("distributed_type", "")).upper()
        distributed = bool(lay.num_processes > 1 or lay.num_machines > 1
                           or opts.get("use_deepspeed") or opts.get("use_fsdp")
                           or dtype in ("DEEPSPEED", "FSDP"))
        if opts.get("multi_gpu") and total < 2:
            lay.problems["multi_gpu_one_process"] = total
    elif lay.launcher == "torchrun":
        nproc = opts.get("nproc_per_node", 1)
        lay.num_processes = (len(lay.visible) or 1) if nproc in ("gpu", "auto") else (
            _processes(lay.launcher, "nproc_per_node", nproc, 1))
        lay.num_machines = _int(str(opts.get("nnodes", 1)).split(":")[-1], 1) or 1
        node_rank = _int(opts.get("node_rank"), 0) or 0
        lay.world_size = lay.num_processes * lay.num_machines
        distributed = True
    elif lay.launcher == "deepspeed":
        include = opts.get("include")
        if isinstance(include, str) and ":" in include:
            ids = include.split(":", 1)[1]
            lay.visible = resolve_visible(ids, facts.gpus, order).gpus
            lay.visible_source = f"--include {include}"
        gpus = _processes(lay.launcher, "num_gpus", opts.get("num_gpus"), -1, allowed=(-1,))
        # deepspeed's default -1: every visible GPU
        lay.num_processes = (len(lay.visible) or 1) if gpus == -1 else gpus
        lay.num_machines = _int(opts.get("num_nodes"), 1) or 1
        lay.world_size = lay.num_processes * lay.num_machines
        distributed = True
    else:  # plain python: one process, unless already inside a distributed launch
        distributed = "LOCAL_RANK" in env and _int(env.get("WORLD_SIZE"), 1) > 1
        lay.num_processes = 1
        lay.world_size = _int(env.get("WORLD_SIZE"), 1) if distributed else 1

    if lay.num_processes > MAX_PROCESSES or lay.num_machines > MAX_MACHINES:
        what = (f"{lay.num_processes} processes per machine" if lay.num_processes > MAX_PROCESSES
                else f"{lay.num_machines} machines")
        raise InputError(f"launch command ({lay.launcher})",
                         f"{what}: more than any GRPO job runs (envdoctor plans up to "
                         f"{MAX_PROCESSES} processes per machine on {MAX_MACHINES} machines)")
    if distributed:
        lay.process_gpus = 1
        for local in range(lay.num_processes):
            gpu = lay.visible[local] if local < len(lay.visible) else None
            lay.ranks.append(Rank(rank=node_rank * lay.num_processes + local, local_rank=local,
                                  gpu=gpu, visible=list(lay.visible)))
    else:
        lay.process_gpus = len(lay.visible)
        lay.ranks.append(Rank(rank=0, local_rank=0, gpu=lay.visible[0] if lay.visible else None,
                              visible=list(lay.visible)))
    lay.problems["distributed"] = distributed
    _resolve_generation(lay, facts, plan, kb)
    return lay


def _resolve_generation(lay: GpuLayout, facts: Facts, plan: Plan, kb: Knowledge) -> None:
    lay.generation_mode = vllm_mode(plan, facts, kb)
    if lay.generation_mode == "legacy":
        device = str(plan.config.get("vllm_device", "auto"))
        lay.vllm_device = device
        resolved = f"cuda:{lay.world_size}" if device == "auto" else device
        if device == "auto" and len(lay.visible) == 1 and kb.feature(
                "vllm_auto_single_gpu_shares", facts.version("trl")):
            resolved = "cuda:0"  # TRL 0.15: with one GPU, vLLM shares it with training
        lay.vllm_device_resolved = resolved
        m = _CUDA_INDEX.match(resolved)
        if m is None:
            if resolved != "cuda":
                lay.problems["vllm_device_format"] = resolved
            return
        idx = int(m.group(1))
        if idx < len(lay.visible):
            lay.generation = [lay.visible[idx]]
        else:
            lay.problems["vllm_device"] = {"requested": resolved, "visible": len(lay.visible)}
    elif lay.generation_mode == "server":
        lay.server = _server(facts, plan)
        lay.generation = list(lay.server.gpus)
    elif lay.generation_mode == "colocate":
        lay.generation = lay.training


def _server(facts: Facts, plan: Plan) -> ServerPlan:
    cfg = plan.config
    launch = plan.server
    if launch is not None:
        o = launch.options
        srv = ServerPlan(host=str(o.get("host", "0.0.0.0")), port=_int(o.get("port"), 8000) or 8000,
                         tensor_parallel_size=_int(o.get("tensor_parallel_size"), 1) or 1,
                         data_parallel_size=_int(o.get("data_parallel_size"), 1) or 1,
                         source="launch")
        env = dict(facts.env)
        env.update(launch.env)
        visible = resolve_visible(env.get("CUDA_VISIBLE_DEVICES"), facts.gpus,
                                  env.get("CUDA_DEVICE_ORDER")).gpus
        srv.gpus = visible[: srv.tensor_parallel_size * srv.data_parallel_size]
        return srv
    for gpu in facts.gpus:
        for proc in gpu.processes:
            if any(n in proc.name for n in _SERVER_NAMES):
                srv = ServerPlan(source="nvml", pid=proc.pid)
                srv.gpus = sorted(g.index for g in facts.gpus
                                  if any(p.pid == proc.pid for p in g.processes))
                m = re.search(r"--port[ =](\d+)", proc.name)
                srv.port = int(m.group(1)) if m else 8000
                return srv
    return ServerPlan(host=str(cfg.get("vllm_server_host", "0.0.0.0")),
                      port=_int(cfg.get("vllm_server_port"), 8000) or 8000, source="config")
