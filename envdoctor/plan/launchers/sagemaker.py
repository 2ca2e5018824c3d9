"""SageMaker training estimators (``PyTorch(...)``, ``HuggingFace(...)``, ``Estimator(...)`` of
the SageMaker Python SDK), read by their syntax tree: ``entry_point``, ``instance_type``,
``instance_count`` and ``distribution``.

SageMaker runs the entry point once per instance unless a distribution says otherwise
(https://docs.aws.amazon.com/sagemaker/latest/dg/data-parallel-framework-estimator.html):
``torch_distributed`` runs it under torchrun with one process per GPU of the instance,
``pytorchddp`` and ``smdistributed`` through mpirun with one process per GPU and the variables
torch.distributed needs; ``mpi`` starts ``processes_per_host`` copies through mpirun.
"""

from __future__ import annotations

import re
from typing import Any

from envdoctor.plan.launchers import JobLaunch
from envdoctor.plan.launchers.counts import finish
from envdoctor.plan.launchers.pysource import UNKNOWN, calls, constants, imports, keywords, parse

KIND = "SageMaker estimator"
_ESTIMATORS = {"PyTorch", "HuggingFace", "Estimator", "Framework"}
#: GPUs of an EC2 GPU instance family by size (https://aws.amazon.com/ec2/instance-types/,
#: accelerated computing); a size not listed has one GPU in the g families
_EIGHT = {"p3.16xlarge", "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "g4dn.metal"}
_G_FAMILIES = ("g4dn", "g5", "g6", "g6e")


def instance_gpus(instance_type: str) -> int | None:
    """GPUs of a SageMaker instance type (``ml.p4d.24xlarge``: 8); None when not known."""
    name = instance_type.removeprefix("ml.")
    if name in _EIGHT or re.fullmatch(r"p[56][a-z0-9-]*\.48xlarge", name):
        return 8
    if name in ("p3.2xlarge", "p5.4xlarge"):
        return 1
    if name == "p3.8xlarge":
        return 4
    family, _, size = name.partition(".")
    if family in _G_FAMILIES and size:
        return {"12xlarge": 4, "24xlarge": 4, "48xlarge": 8}.get(size, 1)
    return None


def read(text: str, shown: str) -> list[JobLaunch]:
    tree = parse(text)
    if tree is None or not imports(tree, "sagemaker"):
        return []
    consts = constants(tree)
    out = []
    for call in calls(tree, {"ModelTrainer"}):
        out += _trainer(f"{shown}:{call.lineno}", keywords(call, consts))
    for call in calls(tree, _ESTIMATORS):
        kw = keywords(call, consts)
        entry = kw.get("entry_point")
        if not isinstance(entry, str) or entry is UNKNOWN:
            continue
        out += _job(f"{shown}:{call.lineno}", entry, kw)
    return out


def _trainer(where: str, kw: dict[str, Any]) -> list[JobLaunch]:
    """The SDK's ``ModelTrainer(source_code=SourceCode(entry_script=… or command=…),
    compute=Compute(instance_type=…, instance_count=…), distributed=Torchrun(process_count_per_node=…)
    or MPI(…))``: Torchrun starts ``process_count_per_node`` processes per instance (by default
    one per GPU), MPI that many copies through mpirun."""
    source, compute, dist = kw.get("source_code"), kw.get("compute"), kw.get("distributed")
    if not isinstance(source, dict):
        return []
    entry, command = source.get("entry_script"), source.get("command")
    if isinstance(command, str):
        line = command
    elif isinstance(entry, str):
        line = f"python {entry}" if entry.endswith(".py") else f"bash {entry}"
    else:
        return []
    job = JobLaunch(kind="SageMaker ModelTrainer", source=where, command=line)
    compute = compute if isinstance(compute, dict) else {}
    itype, count = compute.get("instance_type"), compute.get("instance_count", 1)
    if isinstance(itype, str):
        job.gpus_per_node = instance_gpus(itype)
    if (
        not isinstance(count, int)
        or isinstance(count, bool)
        or count < 1
        or not isinstance(kw.get("compute"), dict)
    ):
        job.unknown = "its compute (instance_count) is not a literal envdoctor reads"
        return finish(job, None, False)
    job.nodes = count
    if dist is None:
        return finish(job, 1, False)
    kind = dist.get("__call__") if isinstance(dist, dict) else None
    per = dist.get("process_count_per_node") if isinstance(dist, dict) else None
    if kind == "Torchrun":
        per = per if per is not None else job.gpus_per_node
        if not isinstance(per, int) or per < 1:
            job.unknown = (
                "it starts one process per GPU of its instance type, and how many GPUs that is is not known"
            )
            return finish(job, None, False)
        return finish(job, per, True)
    if kind == "MPI" and isinstance(per, int) and per >= 1:
        return finish(job, per, False)
    job.unknown = "its distributed= is not one envdoctor counts"
    return finish(job, None, False)


def _job(where: str, entry: str, kw: dict[str, Any]) -> list[JobLaunch]:
    command = f"python {entry}" if entry.endswith(".py") else f"bash {entry}"
    job = JobLaunch(kind=KIND, source=where, command=command)
    itype, count = kw.get("instance_type"), kw.get("instance_count", 1)
    if isinstance(itype, str):
        job.gpus_per_node = instance_gpus(itype)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        job.unknown = f"its instance_count ({'not a literal' if count is UNKNOWN else count!r}) is not known"
        return finish(job, None, False)
    job.nodes = count
    dist = kw.get("distribution")
    if dist is None:
        return finish(job, 1, False)
    if not isinstance(dist, dict):
        job.unknown = "its distribution is not a literal envdoctor reads"
        return finish(job, None, False)
    on = [k for k, v in dist.items() if isinstance(v, dict) and v.get("enabled", True) is True]
    if any(k in ("torch_distributed", "pytorchddp") for k in on) or (
        "smdistributed" in dist and isinstance(dist["smdistributed"], dict)
    ):
        if job.gpus_per_node is None:
            named = itype if isinstance(itype, str) else "its instance type"
            job.unknown = f"it starts one process per GPU of {named}, and how many GPUs that is is not known"
            return finish(job, None, False)
        return finish(job, job.gpus_per_node, True)
    if "mpi" in on:
        per = dist["mpi"].get("processes_per_host", 1)
        if not isinstance(per, int) or per < 1:
            job.unknown = "its processes_per_host is not known"
            return finish(job, None, False)
        return finish(job, per, False)
    job.unknown = f"its distribution ({', '.join(map(str, dist)) or 'empty'}) is not one envdoctor counts"
    return finish(job, None, False)
