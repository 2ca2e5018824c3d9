"""What the probe is asked to run (``ProbeSpec``) and what it saw (``ProbeResult``): the runner
fills them, the judges read them (``envdoctor.probe.run.runner`` re-exports both)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envdoctor.findings import Finding
from envdoctor.plan.interface import Launch
from envdoctor.probe.plan.model_source import ProbeModel

#: the probe's phases, in the order they are reported, and their names in the report
PHASES = {
    "server_start": "server start → /health",
    "launch": "launch",
    "imports": "trainer imports",
    "cuda_init": "CUDA init",
    "model_build": "model load",
    "trainer_init": "trainer init",
    "sync": "weight sync",
    "vllm_generate": "vLLM generation",
    "steps": "step",
    "teardown": "teardown",
    "total": "total",
}


@dataclass
class ProbeSpec:
    """What to launch and what to expect. ``rank_gpus`` maps rank → NVML index (None: CPU)."""

    launcher: list[str]
    env: dict[str, str] = field(default_factory=dict)
    rank_gpus: dict[int, int | None] = field(default_factory=dict)
    generation_gpus: list[int] = field(default_factory=list)
    gpu_uuids: dict[int, str] = field(default_factory=dict)  # NVML index → UUID
    timeout_s: float = 180.0
    steps: int = 1
    model_family: str = "qwen2"  # or "llama"
    bf16: bool | None = None  # None: bf16 where the GPU supports it, off on CPU
    fp16: bool | None = None
    gradient_checkpointing: bool = False
    #: the user's LoRA (``use_peft``): r, lora_alpha, lora_dropout, target_modules as TRL's
    #: ModelConfig passes them to ``get_peft_config``; None: full fine-tuning
    peft: dict[str, Any] | None = None
    num_generations: int = 2
    per_device_train_batch_size: int = 2
    gradient_accumulation_steps: int = 1
    use_vllm: bool = False  # the probe generates with the trainer's own generate() by default
    vllm_mode: str | None = None  # server | colocate | legacy (TRL 0.14-0.15's vllm_device)
    vllm: dict[str, Any] = field(default_factory=dict)  # GRPOConfig vllm_* settings (user's)
    #: vLLM not installed: the package resolver's pip line (the release in TRL's range built for
    #: the installed torch), as `check` says it in PKG001
    vllm_install: str = ""
    server_launch: Launch | None = None  # server mode: the user's trl vllm-serve / vllm serve
    server_visible: list[int] = field(default_factory=list)  # NVML indices it sees, CUDA order
    trainer_visible: list[int] = field(default_factory=list)  # NVML indices the ranks see
    user_server: tuple[str, int] | None = None  # (host, port) of the user's own server
    notes: list[str] = field(default_factory=list)  # what the plan could not probe as given
    model: ProbeModel | None = None  # the user's shape (None or generic: the tiny model)
    #: a launch line over several nodes: what its rendezvous would dial (the probe is not run)
    multi_node: str | None = None
    #: inside a multi-node job (``check --distributed --probe``): ``host:port`` where the ranks
    #: of every node meet (the job's own rendezvous host); the launcher's line is run as given
    job_rendezvous: str | None = None
    #: server mode inside a job: the probe server another node of the job runs (host, port,
    #: group port); this node's ranks generate there and sync their weights to it
    remote_server: tuple[str, int, int] | None = None
    #: the training stack's versions as envdoctor knows them (distribution → version): the
    #: exact versions PRB009's install command names for the modules the interpreter lacks
    packages: dict[str, str] = field(default_factory=dict)
    #: the user's first rows and vLLM's prompt limit (user_batch.data_for_probe), or the reason none
    user_data: dict[str, Any] = field(default_factory=dict)
    #: where the worker imports the user's reward functions from (user_batch), or the reason not
    user_rewards: dict[str, Any] = field(default_factory=dict)
    fault: str | None = None  # tests only: crash, hang, killed, exit, oom, hang_collective
    fault_at: str = "start"  # start | imports | trainer_init


@dataclass
class ProbeResult:
    """What the probe saw. ``ranks`` holds each rank's own record (``finished`` False: it
    started but wrote no result); ``isolation_offenders`` one dict per (pid, GPU) outside the
    plan: rank, pid, gpu, mib, role ("generation" | "other rank's" | "idle")."""

    status: str  # pass | fail | timeout | interrupted | error | not run (several nodes)
    ranks: dict[int, dict[str, Any]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    isolation: str = "not measurable"  # proved | violated | not proved | not measurable
    isolation_detail: str = ""
    isolation_offenders: list[dict[str, Any]] = field(default_factory=list)
    peak_mib: dict[int, int] = field(default_factory=dict)  # NVML index → MiB held by the probe
    wall_s: float = 0.0
    phase: str = "launching"
    log_tail: str = ""
    leftover_pids: list[int] = field(default_factory=list)
    leftover_gpu: list[dict[str, int]] = field(default_factory=list)  # pid, gpu, mib after the end
    temp_dir_removed: bool = False
    returncode: int | None = None
    t_start: float = 0.0  # epoch seconds: the runner started / finished
    t_end: float = 0.0
    generation: str = "the trainer's own generate()"
    server: dict[str, Any] = field(default_factory=dict)  # the probe server: argv, pid, health…
    user_server: dict[str, Any] = field(default_factory=dict)  # a running server: before/after
    events: dict[str, float] = field(default_factory=dict)  # runner events, s since start
    holders: dict[int, list[tuple[int, str, int]]] = field(default_factory=dict)  # after the end
    model: dict[str, Any] = field(default_factory=dict)  # the report's probe.model
    vllm: dict[str, Any] = field(default_factory=dict)  # probe.vllm: the engine as started
    weight_sync: dict[str, Any] = field(default_factory=dict)  # probe.weight_sync: the proof
    data: dict[str, Any] = field(default_factory=dict)  # probe.data: the user's batch (user_judge)
    rewards: dict[str, Any] = field(default_factory=dict)  # probe.rewards: the user's functions
    argv: list[str] = field(default_factory=list)  # the launcher's argv as run
    rendezvous_moved: list[str] = field(default_factory=list)  # the line's remote addresses

    @property
    def timings(self) -> dict[str, float | None]:
        """Seconds per phase: launch (runner start → first rank alive), the slowest rank's
        imports … steps, teardown (last rank done → every process ended), total."""
        ranks = list(self.ranks.values())
        out: dict[str, float | None] = {}
        starts = [d["t_start"] for d in ranks if d.get("t_start")]
        out["launch"] = round(min(starts) - self.t_start, 3) if starts else None
        for name in ("imports", "cuda_init", "model_build", "trainer_init", "steps"):
            vals = [d.get("phases", {}).get(name) for d in ranks]
            vals = [v for v in vals if v is not None]
            out[name] = max(vals) if vals else None
        for name in ("sync", "vllm_generate"):
            vals = [d.get("phases", {}).get(name) for d in ranks]
            vals = [v for v in vals if v is not None]
            if vals:
                out[name] = max(vals)
        ev = self.events
        if "server_start" in ev:
            out["server_start"] = round(
                ev.get("server_healthy", ev.get("server_end", ev.get("end", 0.0))) - ev["server_start"], 3
            )
        if "end" in ev and "trainer_end" in ev:
            out["teardown"] = round(ev["end"] - ev["trainer_end"], 3)
        else:
            ends = [d["t_end"] for d in ranks if d.get("t_end")]
            out["teardown"] = round(self.t_end - max(ends), 3) if ends and self.t_end else None
        out["total"] = self.wall_s
        return out

    @property
    def phase_lines(self) -> list[str]:
        """The phases and their seconds, in order, for the report."""
        names = dict(PHASES)
        if "server_start" in self.events and "server_healthy" not in self.events:
            names["server_start"] = "server start (never healthy)"
        return [f"{names[k]} {v:.1f} s" for k, v in self.timings.items() if v is not None and k in names]
