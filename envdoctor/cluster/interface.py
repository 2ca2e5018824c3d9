"""What ranks send to rank 0: plain, picklable data (no torch objects)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RankInfo:
    """One rank: where it runs and the device it would train on (``cuda:LOCAL_RANK``)."""

    rank: int
    local_rank: int
    node_rank: int | None
    host: str
    pid: int
    boot_id: str = ""
    device: str = "cpu"  # "cuda:1" or "cpu"
    cuda_count: int = 0  # GPUs this rank sees
    gpu_uuid: str = ""  # of its device, normalized (no GPU- prefix, lowercase)
    gpu_name: str = ""
    visible: str | None = None  # its CUDA_VISIBLE_DEVICES
    nccl: bool = False  # torch has NCCL and the rank has a GPU
    error: str | None = None  # why its device could not be read

    @property
    def node_key(self) -> tuple[int, str]:
        """Which node: torchrun's GROUP_RANK, else the machine (boot id, host)."""
        if self.node_rank is not None:
            return (self.node_rank, "")
        return (-1, self.boot_id or self.host)

    @property
    def cuda_index(self) -> int | None:
        return int(self.device.split(":")[1]) if self.device.startswith("cuda:") else None


@dataclass
class NodeInfo:
    """What a node's local rank 0 collected: its facts (a snapshot dict), the torch runtime,
    its own check (a JSON report dict), or why it could not."""

    rank: int  # the rank that collected it
    host: str
    facts: dict[str, Any] | None = None
    runtime: dict[str, str] = field(default_factory=dict)
    check: dict[str, Any] | None = None
    error: str | None = None  # no facts at all
    check_error: str | None = None  # facts sent, but the node's own check could not run
    override: str | None = None  # ENVDOCTOR_FACTS_OVERRIDE file merged into the facts


@dataclass
class Measurement:
    """One all-reduce measurement (one size, one group) as one rank timed it."""

    group: str  # "all" or "node 0 ↔ node 1"
    ranks: list[int]
    backend: str
    size: int  # bytes per rank
    seconds: float | None = None  # mean time of one all-reduce
    error: str | None = None
    correct: bool | None = None  # the sum check (None: not run)

    @property
    def algbw(self) -> float | None:
        """Algorithm bandwidth, bytes per second (size / time)."""
        return self.size / self.seconds if self.seconds else None

    @property
    def busbw(self) -> float | None:
        """Bus bandwidth, nccl-tests' convention for all-reduce: algbw × 2(n−1)/n."""
        n = len(self.ranks)
        return self.algbw * 2 * (n - 1) / n if self.algbw is not None and n else None


@dataclass
class BenchPlan:
    """What rank 0 decided after the gather; every rank runs the same plan."""

    backend: str  # "nccl" or "gloo"
    sizes: list[int]
    warmup: int
    iters: int
    timeout_s: float
    rounds: list[list[tuple[int, int, str]]] = field(default_factory=list)  # (rank, rank, label)
    why: str = ""  # why this backend
    skip: str = ""  # why no measurement at all


@dataclass
class RankResult:
    """A rank's part of the benchmark, gathered to rank 0 after it."""

    rank: int
    measurements: list[Measurement] = field(default_factory=list)
    error: str | None = None
