"""Resolve a plan into a ``GpuLayout``: the physical GPU of every rank and of generation.

Semantics followed (sources in rules/layout.yaml):
- accelerate sets ``CUDA_VISIBLE_DEVICES`` to ``--gpu_ids`` (replacing the caller's value); without
  ``--num_processes`` or a config it starts one process per visible GPU;
- torchrun / deepspeed / several accelerate processes: rank ``i`` on node-local ``cuda:i``;
- one process without a distributed launcher sees every visible GPU (``n_gpu``), which is what
  makes ``transformers.Trainer`` wrap the model in ``nn.DataParallel``;
- legacy TRL (``vllm_device``): ``auto`` is ``cuda:<num_processes>`` of rank 0's visible GPUs;
- server mode: the GPUs of the ``trl vllm-serve`` process (tensor × data parallel);
- colocate mode: vLLM inside every training process, on its GPU; so is a trainer that starts vLLM
  in-process by design (Unsloth's ``from_pretrained(..., fast_inference=True)``, read from the script).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from envdoctor.coerce import as_int
from envdoctor.errors import InputError
from envdoctor.facts.gpus import is_vllm_process
from envdoctor.facts.interface import Facts
from envdoctor.knowledge import Knowledge
from envdoctor.plan.interface import (
    DEFAULT_SERVER_HOST,
    DEFAULT_SERVER_PORT,
    GpuLayout,
    Launch,
    Plan,
    Rank,
    ServerPlan,
)
from envdoctor.plan.placeholders import placeholder
from envdoctor.plan.visible_devices import resolve_visible

_CUDA_INDEX = re.compile(r"^cuda:(\d+)$")


MAX_PROCESSES = 4096  # per machine: more than any node has GPUs
MAX_MACHINES = 100_000
_VARIABLE = re.compile(r"^\$(\w+)$|^\$\{(\w+)\}$")


class _Unresolved(Exception):
    """A count the launch leaves to the shell (``--num_processes $WORLD_SIZE``)."""


def _count(
    where: str,
    flag: str,
    raw: Any,
    env: dict[str, str],
    default: Any = None,
    minimum: int = 1,
    allowed: tuple[int, ...] = (),
    words: tuple[str, ...] = (),
    unit: str = "process",
) -> Any:
    """A count from the launch line or a config: ``default`` when absent, one of ``words``, or
    a whole number of at least ``minimum`` (or one of the launcher's ``allowed`` specials);
    anything else is bad input naming the flag and value."""
    if raw is None:
        return default
    text = str(raw).strip() if not isinstance(raw, bool) else ""
    m = _VARIABLE.match(text)
    if m and (m.group(1) or m.group(2)) in env:
        text = env[m.group(1) or m.group(2)].strip()
    if text.lower() in words:
        return text.lower()
    if placeholder(text, number=True):
        raise _Unresolved(_left_to(f"{flag} {raw}", "the number"))
    if isinstance(raw, bool) or not re.fullmatch(r"[+-]?\d+", text):
        kind = "a whole number" + (f" or {', '.join(words)}" if words else "")
        raise InputError(where, f"{flag} {raw}: expected {kind}")
    if len(text.lstrip("+-")) > 9:
        raise InputError(
            where,
            f"{flag} {text[:20]}{'…' * (len(text) > 20)}: more than any "
            f"GRPO job runs (envdoctor plans up to {MAX_PROCESSES} processes per "
            f"machine on {MAX_MACHINES} machines)",
        )
    count = int(text)
    if count < minimum and count not in allowed:
        need = f"at least {minimum} {unit} is needed" if minimum else "must be 0 or more"
        raise InputError(
            where, f"{flag} {raw}: {need}" + (f" (or {', '.join(map(str, allowed))})" if allowed else "")
        )
    return count


def _expand(value: str | None, env: dict[str, str]) -> str | None:
    """``$VAR`` / ``${VAR}`` from ``env`` as the shell expands it; anything else as it is."""
    m = _VARIABLE.match(value.strip()) if value is not None else None
    return env[m.group(1) or m.group(2)] if m and (m.group(1) or m.group(2)) in env else value


def _left_to(what: str, give: str) -> str:
    """Why a layout stays unresolved: a word the shell or the reader fills in."""
    who = "the shell" if "$" in what or "`" in what else "the reader (a placeholder)"
    return f"{what} is left to {who}; envdoctor does not evaluate it (give {give})"


def trainer_env(facts: Facts, launch: Launch | None) -> dict[str, str]:
    """The environment the trainer starts with: this shell's, then the launch line's prefix."""
    env = dict(facts.env)
    if launch is not None:
        env.update(launch.env)
    return env


def mode_unknown(plan: Plan, facts: Facts, kb: Knowledge) -> str | None:
    """Why the generation mode is decided by the training script at run time, or None: it
    computes ``use_vllm`` (``use_vllm=args.vllm``), or, with vLLM on and a TRL that has modes
    (or none installed), ``vllm_mode``. No layout rule may assert a mode then, TRL's default
    included."""
    if plan.script is not None and plan.script.vllm_in_process:
        return None  # the trainer starts vLLM in its own process whatever the keys say
    if not plan.use_vllm:
        return "the training script computes use_vllm" if plan.computed("use_vllm") else None
    trl = facts.version("trl")
    if kb.feature("vllm_device_in_process", trl) or kb.feature("vllm_colocate_mode", trl) is False:
        return None  # one mode only: vllm_mode is not read
    return "the training script computes vllm_mode" if plan.computed("vllm_mode") else None


def vllm_mode(plan: Plan, facts: Facts, kb: Knowledge) -> str | None:
    """How this TRL version reaches vLLM for this config: legacy, server, colocate or None (no
    vLLM, or a mode the script decides at run time: mode_unknown)."""
    if not plan.use_vllm or mode_unknown(plan, facts, kb):
        return None
    if plan.script is not None and plan.script.vllm_in_process:
        return "colocate"  # the trainer starts vLLM in its own process (Unsloth fast_inference)
    trl = facts.version("trl")
    if kb.feature("vllm_device_in_process", trl):
        return "legacy"
    has_modes = kb.feature("vllm_colocate_mode", trl)
    if has_modes:
        mode = plan.config.get("vllm_mode")
        if mode in ("server", "colocate"):
            return str(mode)
        return str(default_mode(kb, trl) or "server")
    if has_modes is False:
        return "server"
    # TRL not installed or unknown: infer from the config's own keys
    if "vllm_device" in plan.config:
        return "legacy"
    return (
        plan.config.get("vllm_mode") if plan.config.get("vllm_mode") in ("server", "colocate") else "colocate"
    )


def default_mode(kb: Knowledge, trl: str | None) -> str | None:
    """TRL's default ``vllm_mode`` for release ``trl`` (rules/knowledge/trl.yaml); past the
    knowledge horizon, the newest known release's (what envdoctor extrapolates: TRL 1.x defaults
    to colocate); None where the knowledge holds no default (before 0.18, an unknown release)."""
    from envdoctor.knowledge import beyond_horizon, horizon

    line = kb.trl_line(trl)
    if line is None and beyond_horizon("trl", trl, kb) is not None:
        line = kb.trl_line(str((horizon(kb).get("trl") or {}).get("newest") or ""))
    mode = (line or {}).get("default_vllm_mode")
    return str(mode) if mode else None


def resolve_layout(facts: Facts, plan: Plan, kb: Knowledge) -> GpuLayout:
    """The layout of the plan; ``unresolved`` set (and no ranks) when the launch line does not
    say what runs on a node."""
    trainer = plan.trainer
    env = trainer_env(facts, trainer)
    order = env.get("CUDA_DEVICE_ORDER")
    lay = GpuLayout(launcher=trainer.launcher if trainer else "python")
    cvd = _expand(env.get("CUDA_VISIBLE_DEVICES"), env)
    if cvd is not None and placeholder(cvd, number=True):
        lay.unresolved = _left_to("CUDA_VISIBLE_DEVICES=" + cvd, "the GPU list")
        return lay
    seen = resolve_visible(cvd, facts.gpus, order)
    lay.visible = seen.gpus
    lay.visible_source = f"CUDA_VISIBLE_DEVICES={cvd}" if cvd is not None else "all GPUs"
    if seen.problem:
        lay.problems["visible"] = seen.problem
    if trainer is not None and trainer.unresolved:
        lay.unresolved = trainer.unresolved
        return lay
    try:
        distributed, node_rank = _processes(lay, facts, plan, env)
    except _Unresolved as exc:
        lay.unresolved = str(exc)
        return lay
    if lay.num_processes > MAX_PROCESSES or lay.num_machines > MAX_MACHINES:
        what = (
            f"{lay.num_processes} processes per machine"
            if lay.num_processes > MAX_PROCESSES
            else f"{lay.num_machines} machines"
        )
        raise InputError(
            f"launch command ({lay.launcher})",
            f"{what}: more than any GRPO job runs (envdoctor plans up to "
            f"{MAX_PROCESSES} processes per machine on {MAX_MACHINES} machines)",
        )
    if distributed:
        lay.process_gpus = 1
        for local in range(lay.num_processes):
            gpu = lay.visible[local] if local < len(lay.visible) else None
            lay.ranks.append(
                Rank(
                    rank=node_rank * lay.num_processes + local,
                    local_rank=local,
                    gpu=gpu,
                    visible=list(lay.visible),
                )
            )
    else:
        lay.process_gpus = len(lay.visible)
        lay.ranks.append(
            Rank(rank=0, local_rank=0, gpu=lay.visible[0] if lay.visible else None, visible=list(lay.visible))
        )
    lay.problems["distributed"] = distributed
    if plan.server is not None:
        _server(facts, plan)  # its counts are validated in every mode
    _resolve_generation(lay, facts, plan, kb)
    return lay


def _processes(lay: GpuLayout, facts: Facts, plan: Plan, env: dict[str, str]) -> tuple[bool, int]:
    """Processes per node, nodes and world size as the launcher computes them; returns
    (distributed, this node's rank). Bad counts are input errors naming the flag."""
    resolve = _PROCESSES.get(
        "accelerate" if lay.launcher.startswith("trl-") else lay.launcher, _python_processes
    )
    return resolve(lay, _Counts(lay, facts, plan, env))


class _Counts:
    """The launch's counts as its launcher reads them: a flag of the line, else (where the
    launcher reads one) the accelerate config's key; ``$VAR`` from the trainer's environment."""

    def __init__(self, lay: GpuLayout, facts: Facts, plan: Plan, env: dict[str, str]) -> None:
        trainer = plan.trainer
        self.facts, self.plan, self.env = facts, plan, env
        self.opts: dict[str, Any] = trainer.options if trainer else {}
        self.acc = plan.accelerate
        self.order = env.get("CUDA_DEVICE_ORDER")
        self.where = f"launch command ({lay.launcher})"

    def value(self, name: str, config: bool = False) -> tuple[Any, str, str]:
        if name in self.opts or not config or name not in self.acc:
            return self.opts.get(name), self.where, f"--{name}"
        return (
            self.acc.get(name),
            f"accelerate config {self.plan.accelerate_path or ''}".strip(),
            f"{name}:",
        )

    def count(self, name: str, config: bool = False, **kw: Any) -> Any:
        raw, where, flag = self.value(name, config)
        return _count(where, flag, raw, self.env, **kw)

    def node_rank(self, name: str, config: bool = False) -> int:
        try:
            rank: int = self.count(name, config, default=0, minimum=0)
            return rank
        except _Unresolved:
            return 0  # $SLURM_PROCID: differs per node; rank numbers only


def _accelerate_processes(lay: GpuLayout, c: _Counts) -> tuple[bool, int]:
    """accelerate launch and ``trl <command>`` (which runs accelerate): --gpu_ids sets
    CUDA_VISIBLE_DEVICES; the counts come from the line, else the accelerate config."""
    opts, acc = c.opts, c.acc
    gpu_ids = opts.get("gpu_ids", acc.get("gpu_ids"))
    if gpu_ids is not None and str(gpu_ids).strip().lower() != "all":
        ids = _expand(str(gpu_ids), c.env) or ""
        if placeholder(ids, number=True):
            raise _Unresolved(_left_to(f"--gpu_ids {ids}", "the GPU list"))
        chosen = resolve_visible(ids, c.facts.gpus, c.order)
        entries = [e.strip() for e in ids.split(",") if e.strip()]
        lay.visible = chosen.gpus
        lay.visible_source = f"--gpu_ids {ids} (accelerate sets CUDA_VISIBLE_DEVICES={ids})"
        if chosen.problem:
            lay.problems["gpu_ids"] = chosen.problem.replace("CUDA_VISIBLE_DEVICES", "gpu_ids")
        if len(set(entries)) != len(entries):
            lay.problems["gpu_ids"] = f"gpu_ids {ids} repeats a GPU"
    lay.num_machines = c.count("num_machines", True, default=1, unit="machine")
    node_rank = c.node_rank("machine_rank", True)
    total = c.count("num_processes", True)
    if total is None:
        total = max(len(lay.visible), 1) if not acc else 1
        lay.problems["num_processes_default"] = total
    lay.world_size = total
    lay.num_processes = max(total // lay.num_machines, 1)
    dtype = str(acc.get("distributed_type", "")).upper()
    distributed = bool(
        lay.num_processes > 1
        or lay.num_machines > 1
        or opts.get("use_deepspeed")
        or opts.get("use_fsdp")
        or dtype in ("DEEPSPEED", "FSDP")
    )
    if opts.get("multi_gpu") and total < 2:
        lay.problems["multi_gpu_one_process"] = total
    return distributed, node_rank


def _torchrun_processes(lay: GpuLayout, c: _Counts) -> tuple[bool, int]:
    """torchrun: --nproc_per_node per node (gpu / auto: one per visible GPU), --nnodes nodes."""
    words = ("gpu", "auto", "cpu", "xpu")
    if "nproc_per_node" not in c.opts and c.env.get("PET_NPROC_PER_NODE"):
        # torchrun takes an option it is not given from PET_<OPTION> (its env action; Kubeflow's
        # operator sets PET_NPROC_PER_NODE and PET_NNODES)
        nproc = _count(c.where, "PET_NPROC_PER_NODE", c.env["PET_NPROC_PER_NODE"], c.env, words=words)
    else:
        nproc = c.count("nproc_per_node", default=1, words=words)
    if nproc in ("cpu", "xpu"):
        raise _Unresolved(
            f"--nproc_per_node {nproc} starts one process per "
            f"{'CPU core' if nproc == 'cpu' else 'XPU'}, not per GPU"
        )
    lay.num_processes = (len(lay.visible) or 1) if nproc in ("gpu", "auto") else nproc
    lay.num_machines = _nnodes(c.where, c.opts.get("nnodes", c.env.get("PET_NNODES")), c.env)
    node_rank = c.node_rank("node_rank")
    lay.world_size = lay.num_processes * lay.num_machines
    return True, node_rank


def _deepspeed_processes(lay: GpuLayout, c: _Counts) -> tuple[bool, int]:
    """deepspeed: --include host:ids picks the GPUs; --num_gpus (default: every visible GPU)
    per node, --num_nodes nodes (default: every host of the hostfile)."""
    include = c.opts.get("include")
    if isinstance(include, str) and ":" in include and "@" not in include:
        ids = include.split(":", 1)[1]
        lay.visible = resolve_visible(ids, c.facts.gpus, c.order).gpus
        lay.visible_source = f"--include {include}"
    gpus = c.count("num_gpus", default=None, allowed=(-1,))
    if gpus is None:
        gpus = c.count("num_accelerators", default=-1, allowed=(-1,))
    # deepspeed's default -1: every visible GPU
    lay.num_processes = (len(lay.visible) or 1) if gpus == -1 else gpus
    nodes = c.count("num_nodes", default=-1, allowed=(-1,), unit="node")
    if nodes == -1:  # deepspeed's default: every host of the hostfile
        nodes = _hostfile_nodes(c.opts, include)
    lay.num_machines = nodes
    lay.world_size = lay.num_processes * lay.num_machines
    return True, 0


def _python_processes(lay: GpuLayout, c: _Counts) -> tuple[bool, int]:
    """Plain python: one process, unless already inside a distributed launch."""
    env = c.env
    distributed = "LOCAL_RANK" in env and (as_int(env.get("WORLD_SIZE"), 1) or 1) > 1
    lay.num_processes = 1
    lay.world_size = (as_int(env.get("WORLD_SIZE"), 1) or 1) if distributed else 1
    job = c.plan.job
    if job is not None and not distributed:  # a job launcher the repository declares starts it
        if job.unknown:
            raise _Unresolved(f"{job.kind} ({job.source}) runs this script: {job.unknown}")
        if job.distributed:
            if lay.visible and job.per_node > len(lay.visible):  # its own instances, not this machine
                raise _Unresolved(
                    f"{job.kind} ({job.source}) starts {job.per_node} processes per node on the "
                    f"instances it asks for; this machine shows {len(lay.visible)} GPU(s)"
                )
            lay.num_processes, lay.num_machines = job.per_node, job.nodes or 1
            lay.world_size = lay.num_processes * lay.num_machines
            return True, 0
    return distributed, 0


#: launcher -> how it counts its processes (``trl-<command>`` runs accelerate; any other
#: launcher, python among them, starts the one process it is given)
_PROCESSES: dict[str, Callable[[GpuLayout, _Counts], tuple[bool, int]]] = {
    "accelerate": _accelerate_processes,
    "torchrun": _torchrun_processes,
    "deepspeed": _deepspeed_processes,
}


def _nnodes(where: str, raw: Any, env: dict[str, str]) -> int:
    """torchrun's ``--nnodes N`` or elastic ``MIN:MAX`` (the world size planned at MAX)."""
    if raw is None:
        return 1
    parts = str(raw).split(":") if not isinstance(raw, bool) else [raw]
    if len(parts) > 2:
        raise InputError(where, f"--nnodes {raw}: expected N or MIN:MAX")
    try:
        counts: list[int] = [_count(where, "--nnodes", p, env, unit="node") for p in parts]
    except InputError as exc:
        if len(parts) == 1:
            raise
        raise InputError(where, f"--nnodes {raw}: {exc.problem.split(': ', 1)[-1]}") from None
    if len(counts) == 2 and counts[0] > counts[1]:
        raise InputError(where, f"--nnodes {raw}: MIN is larger than MAX")
    return counts[-1]


def _hostfile_nodes(opts: dict[str, Any], include: Any) -> int:
    """Nodes of a deepspeed launch without ``--num_nodes``: hosts named in ``--include``,
    the hosts of ``--hostfile`` as read by the plan, else this node alone."""
    if isinstance(include, str) and "@" in include:
        return len([h for h in include.split("@") if h.strip()])
    hostfile = opts.get("hostfile", opts.get("H"))
    if hostfile is None:
        return 1
    hosts = opts.get("_hostfile_hosts")
    if not isinstance(hosts, int):
        raise _Unresolved(
            f"deepspeed --hostfile {hostfile}: its hosts are not readable here (give --num_nodes)"
        )
    return hosts


def _resolve_generation(lay: GpuLayout, facts: Facts, plan: Plan, kb: Knowledge) -> None:
    lay.generation_mode = vllm_mode(plan, facts, kb)
    lay.generation_unknown = mode_unknown(plan, facts, kb)
    if lay.generation_mode == "legacy":
        device = str(plan.config.get("vllm_device", "auto"))
        lay.vllm_device = device
        resolved = f"cuda:{lay.world_size}" if device == "auto" else device
        if (
            device == "auto"
            and len(lay.visible) == 1
            and kb.feature("vllm_auto_single_gpu_shares", facts.version("trl"))
        ):
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


#: hosts that name the trainer's own machine
_LOCAL_HOSTS = frozenset({"", "localhost", "0.0.0.0", "::1", "[::1]"})


def _remote_host(facts: Facts, plan: Plan) -> str:
    """The host the trainer asks for its vLLM server where it is another machine (a name or an
    address that is not this one's; a placeholder such as ``$VLLM_NODE`` too); "" where local."""
    host = str(plan.config.get("vllm_server_host") or "").strip()
    base = str(plan.config.get("vllm_server_base_url") or "").strip()
    if base:
        m = re.match(r"^\w+://(\[[^\]]*\]|[^/:]+)", base)
        host = m.group(1) if m else host
    local = host.lower() in _LOCAL_HOSTS or host.startswith("127.") or host == facts.hostname
    return "" if local else host


def _server(facts: Facts, plan: Plan) -> ServerPlan:
    cfg = plan.config
    launch = plan.server
    remote = _remote_host(facts, plan)
    if launch is not None and remote and not launch.placed_by:
        # the trainer asks another machine: the server line runs there, on GPUs of its own
        return ServerPlan(host=remote, port=_port(cfg.get("vllm_server_port")), source=f"host {remote}")
    if launch is not None:
        o = launch.options
        where = f"launch command ({launch.launcher})"
        env = dict(facts.env)
        env.update(launch.env)
        srv = ServerPlan(
            host=str(o.get("host", DEFAULT_SERVER_HOST)), port=_port(o.get("port")), source="launch"
        )
        try:
            srv.tensor_parallel_size = _count(
                where, "--tensor_parallel_size", o.get("tensor_parallel_size"), env, default=1, unit="GPU"
            )
            srv.data_parallel_size = _count(
                where, "--data_parallel_size", o.get("data_parallel_size"), env, default=1, unit="replica"
            )
        except _Unresolved:
            pass  # the server's own check (LAY007) then judges the defaults
        if launch.placed_by:  # srun / mpirun put it on a node of their choice: GPUs unknown
            srv.source = launch.placed_by
            return srv
        cvd = _expand(env.get("CUDA_VISIBLE_DEVICES"), env)
        if cvd is not None and placeholder(cvd, number=True):  # its GPUs are unknown
            srv.source = _left_to("CUDA_VISIBLE_DEVICES=" + cvd, "the GPU list")
            return srv
        visible = resolve_visible(cvd, facts.gpus, env.get("CUDA_DEVICE_ORDER")).gpus
        srv.gpus = visible[: srv.tensor_parallel_size * srv.data_parallel_size]
        return srv
    for gpu in facts.gpus:
        for proc in gpu.processes:
            if is_vllm_process(proc.name):  # VLLM::EngineCore too (vLLM V1)
                srv = ServerPlan(source="nvml", pid=proc.pid)
                srv.gpus = sorted(g.index for g in facts.gpus if any(p.pid == proc.pid for p in g.processes))
                m = re.search(r"--port[ =](\d+)", proc.name)
                srv.port = int(m.group(1)) if m else DEFAULT_SERVER_PORT
                return srv
    return ServerPlan(
        host=str(cfg.get("vllm_server_host", DEFAULT_SERVER_HOST)),
        port=_port(cfg.get("vllm_server_port")),
        source="config",
    )


def _port(value: Any) -> int:
    """A port from a launch line or the config: TRL's default when unset, 0 or not a number."""
    return as_int(value, DEFAULT_SERVER_PORT) or DEFAULT_SERVER_PORT
