"""A short all-reduce benchmark over the job's ranks: every rank together, then each pair of
nodes (their local rank 0 processes), pairs in round-robin rounds so no node is in two pairs at
once.

Every stage starts with an agreement over the gloo control group (did every rank get its
buffers?) so a rank that cannot take part makes all ranks skip the stage instead of leaving the
others in a collective. Collectives run on their own groups with a timeout shorter than the
control group's.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

from envdoctor.cluster.interface import BenchPlan, Measurement, RankInfo, RankResult
from envdoctor.units import MiB

GPU_SIZES = [1 * MiB, 8 * MiB, 64 * MiB]
CPU_SIZES = [256 * 1024, 1 * MiB, 8 * MiB]
MAX_PAIR_NODES = 32  # beyond this only the whole-job all-reduce is timed


def round_robin(leaders: list[tuple[int, str]]) -> list[list[tuple[int, int, str]]]:
    """Rounds of disjoint pairs covering every pair of nodes once (the circle method).

    ``leaders``: (rank of the node's local rank 0, node label) in node order.
    """
    items: list[tuple[int, str] | None] = list(leaders)
    if len(items) < 2:
        return []
    if len(items) % 2:
        items.append(None)
    n = len(items)
    rounds = []
    for _ in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = items[i], items[n - 1 - i]
            if a is not None and b is not None:
                (ra, la), (rb, lb) = sorted((a, b))
                pairs.append((ra, rb, f"{la} ↔ {lb}"))
        rounds.append(sorted(pairs))
        items = [items[0], items[-1], *items[1:-1]]
    return rounds


def make_plan(
    ranks: list[RankInfo], leaders: list[tuple[int, str]], timeout_s: float, unique_gpus: bool
) -> BenchPlan:
    """NCCL when every rank has its own GPU and torch has NCCL, gloo on CPU otherwise."""
    on_gpu = all(r.cuda_index is not None and r.nccl for r in ranks)
    if on_gpu and unique_gpus:
        plan = BenchPlan(
            "nccl", GPU_SIZES, warmup=3, iters=10, timeout_s=timeout_s, why="every rank has its own GPU"
        )
    else:
        why = (
            "two ranks share a GPU (CLU007)"
            if on_gpu
            else "not every rank has a GPU and NCCL"
            if any(r.cuda_count for r in ranks)
            else "no GPU"
        )
        plan = BenchPlan("gloo", CPU_SIZES, warmup=1, iters=5, timeout_s=timeout_s, why=f"{why}: gloo on CPU")
    if len(leaders) <= MAX_PAIR_NODES:
        plan.rounds = round_robin(leaders)
    if len(ranks) < 2:
        plan.skip = "one rank: no collective to time"
    return plan


def _agree(ok: bool) -> bool:
    """True on every rank when ``ok`` is true on every rank (control group, gloo)."""
    import torch
    import torch.distributed as dist

    flag = torch.tensor([1 if ok else 0], dtype=torch.int32)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def _sync(device: Any) -> None:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


def _time(x: Any, group: Any, iters: int) -> float:
    """Mean seconds of one all-reduce of ``x`` (ops queued back to back, waited at the end)."""
    import torch.distributed as dist

    _sync(x.device)
    start = time.perf_counter()
    works = [dist.all_reduce(x, group=group, async_op=True) for _ in range(iters)]
    for work in works:
        work.wait()
    _sync(x.device)
    return (time.perf_counter() - start) / iters


def _check_sum(group: Any, ranks: list[int], device: Any) -> bool:
    """All-reduce each rank's (rank + 1): every rank must get the same, exact sum."""
    import torch
    import torch.distributed as dist

    y = torch.full((1024,), float(dist.get_rank() + 1), dtype=torch.float32, device=device)
    dist.all_reduce(y, group=group)
    return bool((y == float(sum(r + 1 for r in ranks))).all().item())


def _measure(
    plan: BenchPlan, name: str, ranks: list[int], group: Any, buffers: dict[int, Any], device: Any
) -> list[Measurement]:
    import torch.distributed as dist

    out: list[Measurement] = []
    for size, x in buffers.items():
        m = Measurement(name, ranks, plan.backend, size)
        out.append(m)
        try:
            for _ in range(plan.warmup):
                dist.all_reduce(x, group=group)
            _sync(x.device)
            if len(out) == 1:
                m.correct = _check_sum(group, ranks, device)
            m.seconds = _time(x, group, plan.iters)
        except Exception as exc:  # a failed or timed-out collective: recorded, the stage ends
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            m.error = f"{type(exc).__name__}: {first}"
            out += [
                Measurement(name, ranks, plan.backend, s, error="not run: a smaller size failed")
                for s in list(buffers)[len(out) :]
            ]
            break
    return out


def _stage(
    plan: BenchPlan, stages: list[tuple[str, list[int], Any]], sizes: list[int], device: Any, me: int
) -> list[Measurement]:
    """Disjoint groups timed at once; every rank calls this, member of one of them or not."""
    import torch

    mine = next(((name, ranks, group) for name, ranks, group in stages if me in ranks), None)
    buffers: dict[int, Any] = {}
    error = None
    if mine:
        try:
            buffers = {s: torch.zeros(s // 4, dtype=torch.float32, device=device) for s in sizes}
        except Exception as exc:
            error = f"rank {me} could not allocate its buffers: {type(exc).__name__}: {exc}"
    agreed = _agree(error is None)
    out: list[Measurement] = []
    if mine and not agreed:
        out = [
            Measurement(
                mine[0],
                mine[1],
                plan.backend,
                s,
                error=error or "skipped: another rank could not allocate its buffers",
            )
            for s in sizes
        ]
    elif mine:
        out = _measure(plan, mine[0], mine[1], mine[2], buffers, device)
    _agree(True)  # the stage ends together
    return out


def _new_group(plan: BenchPlan, ranks: list[int] | None) -> Any:
    import torch.distributed as dist

    return dist.new_group(ranks=ranks, backend=plan.backend, timeout=timedelta(seconds=plan.timeout_s))


def run(plan: BenchPlan, info: RankInfo) -> RankResult:
    """This rank's part of the benchmark; every rank calls it with the same plan."""
    import torch
    import torch.distributed as dist

    me, world = dist.get_rank(), dist.get_world_size()
    result = RankResult(rank=me)
    if plan.skip:
        return result
    if plan.backend == "nccl":
        # host-side waits that raise on timeout instead of blocking forever
        os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
        device = torch.device(info.device)
    else:
        device = torch.device("cpu")
    everyone = list(range(world))
    result.measurements += _stage(plan, [("all", everyone, _new_group(plan, None))], plan.sizes, device, me)
    for pairs in plan.rounds:
        stages = [(label, [a, b], _new_group(plan, [a, b])) for a, b, label in pairs]
        result.measurements += _stage(plan, stages, plan.sizes[-1:], device, me)
        for _name, ranks, group in stages:
            if me in ranks:
                try:
                    dist.destroy_process_group(group)
                except Exception:  # a group whose collective failed: its end is not ours to fix
                    pass
    return result
