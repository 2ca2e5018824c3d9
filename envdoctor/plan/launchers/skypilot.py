"""SkyPilot task YAML: ``resources.accelerators`` (``H100:8``, ``{H100: 8}``, or a choice of
several), ``num_nodes`` and the ``run:`` block, which SkyPilot runs once on each node with
SKYPILOT_NUM_GPUS_PER_NODE, SKYPILOT_NUM_NODES and SKYPILOT_NODE_RANK set and the task's
``envs`` exported (https://docs.skypilot.co/en/stable/running-jobs/distributed-jobs.html,
https://docs.skypilot.co/en/stable/running-jobs/environment-variables.html)."""

from __future__ import annotations

from typing import Any

from envdoctor.plan.launchers import JobLaunch, mapping, yaml_documents
from envdoctor.plan.launchers.counts import finish

KIND = "SkyPilot task"


def gpus(accelerators: Any) -> tuple[int | None, str | None]:
    """GPUs per node of ``resources.accelerators`` (None and why when not one number)."""
    counts: set[int] = set()
    items = accelerators if isinstance(accelerators, (list, set)) else [accelerators]
    for item in items:
        if isinstance(item, dict):
            counts |= {int(v) for v in item.values() if isinstance(v, (int, float)) and v >= 1}
            continue
        text = str(item)
        name, _, n = text.partition(":")
        counts.add(int(float(n)) if n.strip().replace(".", "", 1).isdigit() else 1)
    if len(counts) == 1:
        return counts.pop(), None
    return None, f"its accelerators ({accelerators!r}) give no one GPU count"


def read(text: str, shown: str) -> list[JobLaunch]:
    docs = yaml_documents(text)
    data = docs[0] if len(docs) == 1 else None
    if not isinstance(data, dict) or not isinstance(data.get("run"), str):
        return []
    res = mapping(data.get("resources"))
    if "accelerators" not in res and "num_nodes" not in data:
        return []
    nodes = data.get("num_nodes", 1)
    job = JobLaunch(kind=KIND, source=shown, command=data["run"])
    envs = mapping(data.get("envs"))
    job.env = {str(k): str(v) for k, v in envs.items() if v is not None}
    if isinstance(nodes, int) and nodes >= 1:
        job.nodes = nodes
        job.env["SKYPILOT_NUM_NODES"] = str(nodes)
    else:
        job.unknown = f"its num_nodes ({nodes!r}) is not a number"
        return finish(job, None, False)
    per_gpu, why = gpus(res.get("accelerators")) if res.get("accelerators") is not None else (0, None)
    if per_gpu is None:
        job.unknown = why
        return finish(job, None, False)
    job.gpus_per_node = per_gpu or None
    job.env["SKYPILOT_NUM_GPUS_PER_NODE"] = str(per_gpu)
    return finish(job, 1, False)
