"""Nodes from the gathered ranks, which rank runs on which GPU, and CLU007 (a rank's device is
not the one the launch gives it, or two ranks share a GPU). Plain data; no torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from envdoctor.cluster.interface import NodeInfo, RankInfo
from envdoctor.facts.interface import Facts
from envdoctor.findings import Finding, Severity
from envdoctor.units import size_text


@dataclass
class Node:
    index: int  # torchrun's node rank (GROUP_RANK), else numbered in rank order
    host: str
    ranks: list[RankInfo] = field(default_factory=list)
    info: NodeInfo | None = None  # what its local rank 0 collected
    facts: Facts | None = None

    @property
    def label(self) -> str:
        return f"node {self.index}" + (f" ({self.host})" if self.host else "")


def normalize_uuid(uuid: str) -> str:
    """NVML says ``GPU-3f1c…``, torch ``3f1c…``: compare without the prefix, in lowercase."""
    text = str(uuid).strip().lower()
    return text.split("-", 1)[1] if text.startswith(("gpu-", "mig-")) else text


def group_nodes(ranks: list[RankInfo], infos: list[NodeInfo | None]) -> list[Node]:
    """Ranks grouped by node; each node's facts parsed from its local rank 0's snapshot."""
    from envdoctor.errors import InputError
    from envdoctor.facts.snapshot import from_dict

    by_key: dict[tuple[int, str], Node] = {}
    for r in sorted(ranks, key=lambda r: r.rank):
        if r.node_key not in by_key:
            index = r.node_rank if r.node_rank is not None else len(by_key)
            by_key[r.node_key] = Node(index=index, host=r.host)
        by_key[r.node_key].ranks.append(r)
    by_rank = {i.rank: i for i in infos if i is not None}
    for node in by_key.values():
        leader = next((by_rank[r.rank] for r in node.ranks if r.rank in by_rank), None)
        node.info = leader
        if leader and leader.facts is not None:
            try:
                node.facts = from_dict(leader.facts, node.label)
            except InputError as exc:  # a node sending a malformed snapshot: reported as such
                leader.error = f"its facts could not be read: {exc}"
    return sorted(by_key.values(), key=lambda n: n.index)


def gpu_of(node: Node, rank: RankInfo) -> int | None:
    """The NVML index of the rank's device (matched by UUID), or None."""
    if not rank.gpu_uuid or node.facts is None:
        return None
    for g in node.facts.gpus:
        if g.uuid and normalize_uuid(g.uuid) == rank.gpu_uuid:
            return g.index
    return None


def _who(rank: RankInfo, node: Node) -> str:
    return f"rank {rank.rank} (local rank {rank.local_rank} on {node.label})"


def layout_findings(nodes: list[Node]) -> list[Finding]:
    """CLU007: a rank without its ``cuda:LOCAL_RANK``, a rank without a GPU among ranks with
    GPUs, two ranks on one GPU."""
    out = []
    ranks = [(r, n) for n in nodes for r in n.ranks if r.error is None]
    any_gpu = any(r.cuda_count for r, _ in ranks)
    for r, n in ranks:
        visible = (
            f"CUDA_VISIBLE_DEVICES={r.visible}" if r.visible is not None else "CUDA_VISIBLE_DEVICES unset"
        )
        if any_gpu and not r.cuda_count:
            out.append(
                Finding(
                    "CLU007",
                    Severity.ERROR,
                    f"{_who(r, n)} sees no GPU ({visible}) while other ranks do",
                    fix="make the node's GPUs visible to every rank (check CUDA_VISIBLE_DEVICES and the "
                    "scheduler's GPU request for that node)",
                    evidence={"rank": r.rank, "visible": r.visible, "host": r.host},
                )
            )
        elif r.cuda_count and r.local_rank >= r.cuda_count:
            out.append(
                Finding(
                    "CLU007",
                    Severity.ERROR,
                    f"{_who(r, n)} should train on cuda:{r.local_rank} but sees only {r.cuda_count} "
                    f"GPU{'s' * (r.cuda_count != 1)} ({visible}): torch.cuda.set_device(LOCAL_RANK) "
                    "fails with 'invalid device ordinal'",
                    fix="give every rank of a node all of its GPUs (no per-task CUDA_VISIBLE_DEVICES, "
                    "e.g. srun --gpus-per-task) and start as many ranks per node as it has GPUs "
                    "(--nproc_per_node)",
                    evidence={
                        "rank": r.rank,
                        "local_rank": r.local_rank,
                        "visible": r.visible,
                        "cuda_count": r.cuda_count,
                    },
                )
            )
    shared: dict[str, list[tuple[RankInfo, Node]]] = {}
    for r, n in ranks:
        if r.gpu_uuid:
            shared.setdefault(r.gpu_uuid, []).append((r, n))
    for group in shared.values():
        if len(group) < 2:
            continue
        r0, n0 = group[0]
        gpu = gpu_of(n0, r0)
        where = f"GPU {gpu}" if gpu is not None else f"one GPU ({r0.gpu_name or r0.device})"
        names = ", ".join(str(r.rank) for r, _ in group)
        out.append(
            Finding(
                "CLU007",
                Severity.ERROR,
                f"ranks {names} share {where} on {n0.label}: each holds a full model replica and "
                "CUDA context there, and NCCL refuses two ranks on one GPU",
                fix="one rank per GPU: --nproc_per_node at most the node's GPU count, one torchrun per "
                "node (not one per srun task), no CUDA_VISIBLE_DEVICES that repeats a GPU",
                evidence={
                    "ranks": [r.rank for r, _ in group],
                    "gpu": gpu,
                    "hosts": sorted({r.host for r, _ in group}),
                },
            )
        )
    return out


def role_rows(nodes: list[Node]) -> list[list[str]]:
    """NODE, HOST, GPU, MODEL, FREE, ROLE: each GPU of each node and the ranks on it."""
    rows = []
    for n in nodes:
        pids = {r.pid for r in n.ranks}
        placed: set[int] = set()
        for g in n.facts.gpus if n.facts else []:
            on = [r for r in n.ranks if r.gpu_uuid and r.gpu_uuid == normalize_uuid(g.uuid or "-")]
            placed |= {r.rank for r in on}
            others = [p for p in g.processes if p.pid not in pids]
            roles = [f"rank {r.rank} (local {r.local_rank})" for r in on]
            if len(on) > 1:
                roles.append("✗ shared")
            roles += [f"other: pid {p.pid}" + (f" {p.name}" if p.name else "") for p in others[:3]]
            rows.append(
                [
                    str(n.index),
                    n.host,
                    str(g.index),
                    g.name,
                    size_text(g.free_mib, of="MiB"),
                    ", ".join(roles) or "idle",
                ]
            )
        rest = [r for r in n.ranks if r.rank not in placed]
        by_device: dict[str, list[RankInfo]] = {}
        for r in rest:
            by_device.setdefault(r.device if not r.error else "?", []).append(r)
        for device, rs in by_device.items():
            name = rs[0].gpu_name or ("CPU" if device == "cpu" else device)
            ranks = ", ".join(f"rank {r.rank} (local {r.local_rank})" for r in rs)
            rows.append([str(n.index), n.host, device, name, "", ranks])
    return rows
