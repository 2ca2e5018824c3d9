"""Each rank's part of the cluster check: its device, and on local rank 0 its node's facts and
own check; everything moves to rank 0 with ``gather_object`` over a gloo control group.

Nothing here raises out of a collection: an error (or a collection that overruns its deadline)
is sent as data, so every rank always reaches the next collective.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from envdoctor.cluster.devices import normalize_uuid
from envdoctor.cluster.interface import NodeInfo, RankInfo
from envdoctor.cluster.job import JobEnv
from envdoctor.errors import InputError

T = TypeVar("T")
# Variables the core collector does not keep but collectives read (compared across nodes).
EXTRA_ENV = ("GLOO_", "FI_", "UCX_", "CUDA_DEVICE_MAX_CONNECTIONS")
stuck: list[threading.Thread] = []  # collections abandoned at their deadline


def init(timeout_s: float) -> None:
    """The control process group: gloo, on every rank, whatever the devices (NCCL is only for
    the benchmark, once every rank is known to have a GPU)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _where(thread: threading.Thread) -> str:
    """Where a stuck thread waits: its innermost envdoctor frame and its innermost frame."""
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return ""
    stack = traceback.extract_stack(frame)
    ours = [
        f
        for f in stack
        if f"{os.sep}envdoctor{os.sep}" in f.filename and not (f.name == "target" and f.filename == __file__)
    ]
    shown = ([ours[-1]] if ours and ours[-1] is not stack[-1] else []) + [stack[-1]]
    where = " → ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in shown)
    return f" (stuck in {where})"


def with_deadline(fn: Callable[[], T], seconds: float, what: str) -> tuple[T | None, str | None]:
    """``fn()`` in a daemon thread: (result, None), or (None, why) on an error or the deadline."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # sent as data, never raised into a collective
            box["error"] = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=target, name=f"envdoctor-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        stuck.append(thread)
        return None, f"{what} did not finish within {seconds:g} s{_where(thread)}"
    if "error" in box:
        return None, f"{what} failed: {box['error']}"
    return box.get("value"), None


def _device(info: RankInfo, local_rank: int) -> RankInfo:
    """The device a trainer on this rank would use: ``cuda:LOCAL_RANK`` among the visible GPUs
    (the only one, when the rank sees exactly one)."""
    import torch

    info.visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    info.cuda_count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if not info.cuda_count:
        return info
    index = local_rank if local_rank < info.cuda_count else (0 if info.cuda_count == 1 else None)
    if index is None:
        info.device = "none"
        return info
    torch.cuda.set_device(index)
    current = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(current)
    info.device = f"cuda:{current}"
    info.gpu_uuid = normalize_uuid(str(getattr(props, "uuid", "")))
    info.gpu_name = props.name
    import torch.distributed as dist

    info.nccl = dist.is_nccl_available()
    return info


def rank_info(job: JobEnv, deadline_s: float) -> RankInfo:
    def fresh() -> RankInfo:
        return RankInfo(
            rank=job.rank,
            local_rank=job.local_rank,
            node_rank=job.node_rank,
            host=socket.gethostname(),
            pid=os.getpid(),
            boot_id=boot_id(),
        )

    result, error = with_deadline(
        lambda: _device(fresh(), job.local_rank), deadline_s, "reading the rank's device"
    )
    if result is not None:
        return result
    info = fresh()  # not the one a stuck thread may still be filling
    info.error = error
    return info


def runtime() -> dict[str, str]:
    """torch's own runtime: its version, CUDA runtime and NCCL (for CLU002)."""
    import torch

    out = {"torch": torch.__version__}
    if torch.version.cuda:
        out["torch_cuda"] = str(torch.version.cuda)
    if torch.cuda.is_available():
        try:
            version = torch.cuda.nccl.version()
            out["nccl"] = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        except Exception:
            pass
    return out


def _extra_env() -> dict[str, str]:
    from envdoctor.facts.environment import mask

    return mask({k: v for k, v in os.environ.items() if k.startswith(EXTRA_ENV)})


def this_launch(job: JobEnv) -> str:
    """The launch the job runs under, as a torchrun line: the layout rules resolve it."""
    nodes = max(job.world_size // max(job.local_world_size, 1), 1)
    return (
        f"torchrun --nproc_per_node {job.local_world_size} --nnodes {nodes} "
        f"--node_rank {job.node_rank or 0} train.py"
    )


def _node(job: JobEnv, options: Any, info: NodeInfo) -> NodeInfo:
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules
    from envdoctor.cluster.override import apply_override
    from envdoctor.doctor import build_report
    from envdoctor.facts.collect import collect_facts
    from envdoctor.facts.snapshot import to_dict
    from envdoctor.plan.build import build_plan
    from envdoctor.report.json_format import to_dict as report_dict

    facts = collect_facts()
    facts.env.update(_extra_env())
    info.runtime = runtime()
    if info.override:
        facts, info.runtime = apply_override(facts, info.runtime, info.override)
    info.facts = to_dict(facts)
    info.host = facts.hostname or info.host
    try:  # the node's own check; its facts are compared across nodes even when it fails
        plan = build_plan(
            config=options.config,
            accelerate_config=options.accelerate_config,
            launch=options.launch or this_launch(job),
            live=True,
        )
        ctx = Context(
            facts=facts,
            plan=plan,
            network=options.network,
            allow_hosts=tuple(getattr(options, "allow_hosts", ()) or ()),
        )
        outcome = run_rules(ctx, select=options.select, ignore=options.ignore)
        info.check = report_dict(build_report(ctx, outcome, subject=f"node {job.node_rank or 0}"))
    except Exception as exc:
        info.check_error = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
    return info


def node_info(job: JobEnv, options: Any, deadline_s: float) -> NodeInfo:
    """Local rank 0's facts and its own check of the node (errors as data)."""
    from envdoctor.cluster.override import ENV

    def fresh() -> NodeInfo:
        return NodeInfo(rank=job.rank, host=socket.gethostname(), override=os.environ.get(ENV))

    result, error = with_deadline(
        lambda: _node(job, options, fresh()), deadline_s, "collecting the node's facts"
    )
    if result is not None:
        return result
    info = fresh()
    info.error = error
    return info


def gather(obj: Any) -> list[Any] | None:
    """``gather_object`` to rank 0 over the control group: the list on rank 0, None elsewhere."""
    import torch.distributed as dist

    out = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(obj, out, dst=0)
    return out


def broadcast(obj: Any = None) -> Any:
    """Rank 0's ``obj`` on every rank."""
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]
