"""Kubeflow training jobs: a PyTorchJob (``spec.pytorchReplicaSpecs`` Master / Worker
``replicas``, ``spec.nprocPerNode``, the container's ``command`` and ``args``) or a Trainer v2
TrainJob (``spec.trainer.numNodes``, ``numProcPerNode``, ``command`` / ``args``).

The training operator starts one pod per replica and passes the per-node count to torchrun as
PET_NPROC_PER_NODE and the node count as PET_NNODES, which torchrun reads for the options its
line does not give (https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/pytorch/,
https://www.kubeflow.org/docs/components/trainer/user-guides/pytorch/); a container that runs
plain ``python`` gets WORLD_SIZE and RANK for one process per pod.
"""

from __future__ import annotations

import shlex
from typing import Any

from envdoctor.plan.launchers import JobLaunch, mapping, yaml_documents
from envdoctor.plan.launchers.counts import finish

KIND = "Kubeflow"


def _container(template: Any) -> dict[str, Any]:
    spec = template.get("spec") if isinstance(template, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    first = containers[0] if isinstance(containers, list) and containers else None
    return first if isinstance(first, dict) else {}


def _command(box: dict[str, Any]) -> str | None:
    words = [*(box.get("command") or []), *(box.get("args") or [])]
    if not words or not all(isinstance(w, (str, int, float)) for w in words):
        return None
    if len(words) >= 3 and words[0] in ("bash", "sh", "/bin/bash", "/bin/sh") and words[1] in ("-c", "-lc"):
        return " ".join(str(w) for w in words[2:])
    return shlex.join(str(w) for w in words)


def _gpus(box: dict[str, Any]) -> int | None:
    res = box.get("resources") or box.get("resourcesPerNode") or {}
    limits = res.get("limits") if isinstance(res, dict) else None
    n = limits.get("nvidia.com/gpu") if isinstance(limits, dict) else None
    try:
        return int(n) if n is not None else None
    except (TypeError, ValueError):
        return None


def _nproc(raw: Any, gpus: int | None) -> tuple[str | None, str | None]:
    if raw is None:
        return None, None
    text = str(raw).strip()
    if text in ("gpu", "auto"):
        return (str(gpus), None) if gpus else (None, f"nprocPerNode {text} and no GPU limit per pod")
    return (text, None) if text.isdigit() else (None, f"nprocPerNode {raw!r} is not a count")


def read(text: str, shown: str) -> list[JobLaunch]:
    out: list[JobLaunch] = []
    for doc in yaml_documents(text):
        if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
            continue
        if doc.get("kind") == "PyTorchJob":
            out += _pytorchjob(doc["spec"], f"{shown} (PyTorchJob)")
        elif doc.get("kind") == "TrainJob":
            out += _trainjob(doc["spec"], f"{shown} (TrainJob)")
    return out


def _pytorchjob(spec: dict[str, Any], where: str) -> list[JobLaunch]:
    replicas = mapping(spec.get("pytorchReplicaSpecs"))
    nodes = 0
    box: dict[str, Any] = {}
    for role in ("Master", "Worker"):
        r = replicas.get(role)
        if isinstance(r, dict):
            nodes += int(r.get("replicas", 1)) if str(r.get("replicas", 1)).isdigit() else 0
            box = box or _container(r.get("template"))
    command = _command(box)
    if command is None:
        return []
    job = JobLaunch(
        kind=f"{KIND} PyTorchJob", source=where, command=command, nodes=nodes or 1, gpus_per_node=_gpus(box)
    )
    nproc, why = _nproc(spec.get("nprocPerNode"), job.gpus_per_node)
    return _done(job, nproc, why)


def _trainjob(spec: dict[str, Any], where: str) -> list[JobLaunch]:
    trainer = mapping(spec.get("trainer"))
    command = _command(trainer)
    if command is None:
        return []
    nodes = trainer.get("numNodes", 1)
    job = JobLaunch(
        kind=f"{KIND} TrainJob",
        source=where,
        command=command,
        nodes=nodes if isinstance(nodes, int) and nodes > 0 else 1,
        gpus_per_node=_gpus(trainer),
    )
    if trainer.get("numProcPerNode") is None and "torchrun" in command:
        runtime = mapping(spec.get("runtimeRef")).get("name") or "its runtime"
        return _done(job, None, f"numProcPerNode is not set: {runtime}'s ML policy sets it")
    nproc, why = _nproc(trainer.get("numProcPerNode"), job.gpus_per_node)
    return _done(job, nproc, why)


def _done(job: JobLaunch, nproc: str | None, why: str | None) -> list[JobLaunch]:
    if why:
        job.unknown = why
        return finish(job, None, False)
    job.env["PET_NNODES"] = str(job.nodes or 1)
    if nproc is not None:
        job.env["PET_NPROC_PER_NODE"] = nproc
    # plain python: one process per pod, with WORLD_SIZE / RANK set by the operator (on a pod
    # with several GPUs whether the script then spreads over them is its own matter)
    return finish(job, 1, (job.gpus_per_node or 1) <= 1)
