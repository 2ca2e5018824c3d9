"""Per-rank preflight results and how rank 0 combines them into one job report.

Plain data and functions: no torch here (the callback moves ``RankCheck`` objects between
ranks with ``torch.distributed``'s object collectives).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from envdoctor.findings import Finding, Severity
from envdoctor.report.interface import Area, Report


@dataclass
class RankCheck:
    """What one rank found about itself: its device, where the plan puts it, its findings."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    host: str = ""
    pid: int = 0
    device: str = "cpu"
    node_id: str = ""  # the machine (kernel boot id): host names repeat across containers
    gpu: int | None = None  # NVML index of the rank's device (None: CPU or unknown)
    gpu_uuid: str = ""
    planned_gpu: int | None = None
    generation: list[int] = field(default_factory=list)
    generation_mode: str | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def who(self) -> str:
        return f"rank {self.rank}" + (f" on {self.host}" if self.host else "")


def device_findings(rc: RankCheck) -> list[Finding]:
    """The rank's own device against the plan: on a generation GPU, or not where planned."""
    out = []
    if rc.gpu is not None and rc.gpu in rc.generation and rc.generation_mode != "colocate":
        out.append(
            Finding(
                "RUN003",
                Severity.ERROR,
                f"{rc.who} trains on GPU {rc.gpu} ({rc.device}), the GPU the plan gives to vLLM "
                f"({rc.generation_mode} mode): training and generation compete for its memory",
                fix="make only the training GPUs visible to the trainer (CUDA_VISIBLE_DEVICES / "
                "--gpu_ids) and keep vLLM on the others",
                evidence={"rank": rc.rank, "gpu": rc.gpu, "generation": rc.generation},
            )
        )
    elif rc.gpu is not None and rc.planned_gpu is not None and rc.gpu != rc.planned_gpu:
        out.append(
            Finding(
                "RUN001",
                Severity.WARNING,
                f"{rc.who} runs on GPU {rc.gpu} ({rc.device}); the launch layout puts it on GPU "
                f"{rc.planned_gpu}",
                fix="let the launcher pick the device (cuda:LOCAL_RANK); do not set the device by hand",
                evidence={"rank": rc.rank, "gpu": rc.gpu, "planned": rc.planned_gpu},
            )
        )
    return out


def job_findings(checks: list[RankCheck]) -> list[Finding]:
    """Across ranks: two ranks on the same GPU (by UUID, else by machine and NVML index)."""
    by_gpu: dict[tuple[str, str], list[int]] = {}
    where: dict[tuple[str, str], tuple[str, int]] = {}
    for rc in checks:
        if rc.gpu is not None:
            key = ("uuid", rc.gpu_uuid) if rc.gpu_uuid else (rc.node_id or rc.host, str(rc.gpu))
            by_gpu.setdefault(key, []).append(rc.rank)
            where.setdefault(key, (rc.host, rc.gpu))
    out = []
    for key, ranks in sorted(by_gpu.items()):
        host, gpu = where[key]
        if len(ranks) > 1:
            names = ", ".join(map(str, sorted(ranks)))
            out.append(
                Finding(
                    "RUN002",
                    Severity.ERROR,
                    f"ranks {names} share GPU {gpu}"
                    + (f" on {host}" if host else "")
                    + ": each process holds a full model, optimizer and CUDA context there",
                    fix="give each rank its own GPU: launch with torchrun / accelerate launch and "
                    "use the device it sets (cuda:LOCAL_RANK)",
                    evidence={"host": host, "gpu": gpu, "ranks": sorted(ranks)},
                )
            )
    return out


def node_id() -> str:
    """This machine's identity: the kernel's boot id (shared by its containers), else the host."""
    import socket

    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip() or socket.gethostname()
    except OSError:
        return socket.gethostname()


def _area_of(rule_id: str) -> str:
    from envdoctor.rule_docs import rule_docs

    doc = rule_docs().get(rule_id)
    return doc.area if doc else "layout"


def combine(report: Report, checks: list[RankCheck]) -> Report:
    """Rank 0's report plus what the other ranks found that rank 0 did not, each finding
    named after its rank, plus the cross-rank findings."""
    seen = {(f.rule, f.message) for f in report.findings}
    areas = {a.key: a for a in report.areas}
    added: list[Finding] = []
    for rc in checks[1:]:
        for f in rc.findings:
            if (f.rule, f.message) in seen:
                continue
            seen.add((f.rule, f.message))
            msg = f.message if f.message.startswith(f"rank {rc.rank}") else f"{rc.who}: {f.message}"
            added.append(dataclasses.replace(f, message=msg))
    added += job_findings(checks)
    for f in added:
        key = _area_of(f.rule)
        if key not in areas:
            areas[key] = Area(key=key, title=key)
            report.areas.insert(-1, areas[key])
        areas[key].findings.append(f)
    if len(checks) > 1:
        hosts = len({rc.node_id or rc.host for rc in checks})
        report.subject += f"; {len(checks)} ranks on {hosts} host{'s' * (hosts != 1)}"
    report.extra["ranks"] = [
        {
            "rank": rc.rank,
            "host": rc.host,
            "pid": rc.pid,
            "device": rc.device,
            "gpu": rc.gpu,
            "gpu_uuid": rc.gpu_uuid,
        }
        for rc in checks
    ]
    return report


def failed_report(rc: RankCheck, error: str, severity: Severity = Severity.ERROR) -> Report:
    """A report holding only "the preflight could not run on this rank"."""
    area = Area(key="layout", title="GPU layout")
    area.findings.append(
        Finding(
            "RUN004",
            severity,
            f"envdoctor could not check {rc.who}: {error}",
            fix="fix the input it names (config path, facts snapshot); if it is envdoctor's own "
            "error, report it with `envdoctor collect` attached",
        )
    )
    from envdoctor import __version__

    return Report(areas=[area], subject=f"preflight of {rc.who}", version=__version__)
