"""``EnvDoctorCallback``: envdoctor's preflight at ``Trainer`` init, and a GPU watch while training.

    from envdoctor.integrations.callback import EnvDoctorCallback
    trainer = GRPOTrainer(..., callbacks=[EnvDoctorCallback()])

This module imports transformers (``import envdoctor`` does not import it). Under
torch.distributed every rank checks its own device; rank 0 gathers the results, prints one report
and broadcasts the verdict, so all ranks raise ``PreflightError`` or all continue together.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from envdoctor.api import PreflightError, config_mapping, is_grpo_config, preflight_report
from envdoctor.errors import InputError
from envdoctor.findings import Severity
from envdoctor.integrations.monitor import GpuMonitor
from envdoctor.integrations.ranks import (
    RankCheck,
    combine,
    device_findings,
    failed_report,
    node_id,
)
from envdoctor.report.interface import Report

if TYPE_CHECKING:
    from envdoctor.facts.interface import Facts

log = logging.getLogger("envdoctor")


def _dist() -> Any:
    """``torch.distributed`` when a process group is up, else None."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def cpu_group(dist: Any) -> Any:
    """A gloo group over the job's ranks for the object collectives: it works whatever state the
    GPUs are in (NCCL refuses two ranks on one GPU, the very thing the check reports)."""
    if dist.get_backend() == "gloo":
        return None  # the default group already is
    try:
        return dist.new_group(backend="gloo")
    except Exception:
        return None


def device_gpu(device: Any, facts: Facts, visible: list[int]) -> int | None:
    """The NVML index of a torch CUDA device: by UUID, else by position among the visible."""
    if getattr(device, "type", "cpu") != "cuda":
        return None
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    try:
        uuid = str(torch.cuda.get_device_properties(index).uuid).removeprefix("GPU-")
        for gpu in facts.gpus:
            if gpu.uuid.removeprefix("GPU-") == uuid:
                return gpu.index
    except Exception:
        pass
    return visible[index] if index < len(visible) else None


class EnvDoctorCallback(TrainerCallback):
    """Run envdoctor's preflight when the ``Trainer`` is built; watch the generation GPUs after.

    ``config``: extra GRPO config (dict or file path) laid over the trainer's ``args``;
    ``launch``: the launch line (default: read from torchrun / accelerate's variables);
    ``facts``: a snapshot instead of this machine (tests, dry runs); ``strict``: warnings stop
    the run too; ``every_n_steps``: how often NVML is sampled; ``generation_gpus``: NVML indices
    of the GPUs vLLM uses (default: from the resolved layout); ``min_free_mib`` /
    ``horizon_steps``: warn when a generation GPU's free memory is below, or projected to fall
    below, that many MiB within that many steps; ``nvml``: an NVML module (tests);
    ``network`` / ``allow_hosts``: as in ``preflight`` (loopback only unless a host is allowed).
    """

    def __init__(
        self,
        config: Mapping[str, Any] | str | os.PathLike | Any = None,
        launch: str | list[str] | None = None,
        strict: bool = False,
        facts: Facts | str | os.PathLike[str] | Mapping[str, Any] | None = None,
        select: list[str] | None = None,
        ignore: list[str] | None = None,
        network: bool = True,
        every_n_steps: int = 50,
        generation_gpus: list[int] | None = None,
        min_free_mib: int = 1024,
        horizon_steps: int = 1000,
        print_report: bool = True,
        nvml: Any = None,
        allow_hosts: list[str] | None = None,
    ) -> None:
        self.config = config
        self.launch = launch
        self.strict = strict
        self.facts = facts
        self.select, self.ignore, self.network = select, ignore, network
        self.allow_hosts = allow_hosts
        self.every_n_steps = max(int(every_n_steps), 1)
        self.generation_gpus = generation_gpus
        self.min_free_mib = min_free_mib
        self.horizon_steps = horizon_steps
        self.print_report = print_report
        self.nvml = nvml
        self.report: Report | None = None
        self.monitor: GpuMonitor | None = None
        self._checks: list[RankCheck] = []
        self._me = RankCheck()

    # -- preflight ---------------------------------------------------------------------------
    def _config(self, args: Any) -> Any:
        """What to check: ``args`` itself, or its GRPO fields with ``config`` laid over them."""
        extra = self.config
        if extra is None:
            return args
        if isinstance(extra, (str, os.PathLike)):
            from envdoctor.parsing import read_mapping

            extra = read_mapping(extra, "GRPO config")
        merged: dict[str, Any] = config_mapping(args) if is_grpo_config(args) else {}
        merged.update(extra if isinstance(extra, Mapping) else config_mapping(extra))
        return merged

    def _local_check(self, args: Any, rank: int, world: int) -> tuple[Report, Any]:
        """This rank's report and context; never raises (a failure becomes a RUN004 finding)."""
        me = self._me = RankCheck(
            rank=rank,
            world_size=world,
            local_rank=int(os.environ.get("LOCAL_RANK", 0) or 0),
            host=socket.gethostname(),
            node_id=node_id(),
            pid=os.getpid(),
        )
        try:
            device = args.device
            me.device = str(device)
            ignore = list(self.ignore or [])
            if getattr(args, "use_cpu", False):
                ignore.append("GPU001")  # training on the CPU on purpose: no GPU is no news
            ctx, report = preflight_report(
                config=self._config(args),
                launch=self.launch,
                facts=self.facts,
                select=self.select,
                ignore=ignore or None,
                network=self.network,
                allow_hosts=self.allow_hosts,
            )
            lay = ctx.layout
            me.gpu = device_gpu(device, ctx.facts, lay.visible)
            gpu = ctx.facts.gpu(me.gpu) if me.gpu is not None else None
            me.gpu_uuid = gpu.uuid if gpu is not None else ""
            me.planned_gpu = next((r.gpu for r in lay.ranks if r.local_rank == me.local_rank), None)
            me.generation, me.generation_mode = list(lay.generation), lay.generation_mode
            own = device_findings(me)
            areas = {a.key: a for a in report.areas}
            for f in own:
                areas["layout"].findings.append(f)
        except InputError as exc:
            report, ctx = failed_report(me, str(exc)), None
        except Exception as exc:  # envdoctor's own bug must not stop training
            report, ctx = failed_report(me, f"{type(exc).__name__}: {exc}", Severity.WARNING), None
        me.findings = report.findings
        return report, ctx

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        _ = args.device  # sets up torch.distributed when the launcher asked for it
        dist = _dist()
        rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
        report, _ctx = self._local_check(args, rank, world)
        checks = [self._me]
        group = cpu_group(dist) if dist is not None and world > 1 else None
        if dist is not None and world > 1:
            gathered: list[Any] = [None] * world
            dist.all_gather_object(gathered, self._me, group=group)
            checks = [c for c in gathered if c is not None]
        self._checks = checks
        verdict: list[Any] = [False, None]
        if rank == 0:
            report = combine(report, checks)
            verdict = [bool(report.exit_code(strict=self.strict)), report]
        if dist is not None and world > 1:
            dist.broadcast_object_list(verdict, src=0, group=group)
        failed, job_report = verdict
        self.report = job_report
        if failed:
            if rank == 0:
                raise PreflightError(job_report)
            raise PreflightError(
                job_report,
                f"envdoctor preflight failed for the job (rank {rank}"
                " stops with the others; rank 0 has the report)",
            )
        if rank == 0 and self.print_report:
            from envdoctor.report import render

            print(render(job_report, "text"), flush=True)
        self._prepare_monitor()

    # -- watch during training ----------------------------------------------------------------
    def _prepare_monitor(self) -> None:
        me = self._me
        local = [c for c in self._checks if c.node_id == me.node_id] or [me]
        if me.rank != min(c.rank for c in local):
            return  # the lowest rank of each machine watches for the whole machine
        gpus = self.generation_gpus if self.generation_gpus is not None else me.generation
        mode = None if self.generation_gpus is not None else me.generation_mode
        if not gpus:
            return
        first = next((c for c in self._checks if c.rank == 0), None)
        allowed = {first.pid} if mode == "legacy" and first and first.node_id == me.node_id else set()
        self.monitor = GpuMonitor(
            gpus,
            job_pids={c.pid: c.who for c in local},
            allowed_pids=allowed,
            check_pids=mode != "colocate",
            min_free_mib=self.min_free_mib,
            horizon_steps=self.horizon_steps,
            nvml=self.nvml,
            logger=log,
        )

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.monitor is not None and not self.monitor.start():
            log.info("envdoctor: not watching the generation GPUs: %s", self.monitor.error)
            self.monitor = None
        if self.monitor is not None:
            self.monitor.sample(state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.monitor is not None and state.global_step % self.every_n_steps == 0:
            self.monitor.sample(state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.monitor is not None:
            self.monitor.close()
