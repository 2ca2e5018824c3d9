"""Azure ML command jobs: a job YAML (``command:``, ``distribution: {type: pytorch,
process_count_per_instance: N}``, ``resources: {instance_count: M}``) or the Python SDK's
``command(..., distribution=PyTorchDistribution(process_count_per_instance=N) or {"type":
"pytorch", ...}, instance_count=M)``, read by its syntax tree.

Azure ML's PyTorch distribution starts ``process_count_per_instance`` copies of the command on
each node and sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK and NODE_RANK for each
(https://learn.microsoft.com/en-us/azure/machine-learning/how-to-train-distributed-gpu); its
default is one process per node. An MPI distribution starts them through mpirun, with Open MPI's
variables rather than torch's: the count of torch processes is then up to the script.
"""

from __future__ import annotations

from typing import Any

from envdoctor.plan.launchers import JobLaunch, mapping, yaml_documents
from envdoctor.plan.launchers.counts import finish
from envdoctor.plan.launchers.pysource import UNKNOWN, calls, constants, imports, keywords, parse

KIND = "Azure ML command job"


def read(text: str, shown: str) -> list[JobLaunch]:
    if shown.endswith((".yml", ".yaml")):
        return _yaml(text, shown)
    return _python(text, shown)


def _yaml(text: str, shown: str) -> list[JobLaunch]:
    docs = yaml_documents(text)
    data = docs[0] if len(docs) == 1 else None
    if not isinstance(data, dict) or not isinstance(data.get("command"), str):
        return []
    resources = mapping(data.get("resources"))
    env = mapping(data.get("environment_variables"))
    return _job(shown, data["command"], data.get("distribution"), resources.get("instance_count", 1), env)


def _python(text: str, shown: str) -> list[JobLaunch]:
    tree = parse(text)
    if tree is None or not imports(tree, "azure.ai.ml"):
        return []
    consts = constants(tree)
    out = []
    for call in calls(tree, {"command"}):
        kw = keywords(call, consts)
        cmd = kw.get("command")
        if cmd is UNKNOWN or not isinstance(cmd, str):
            continue
        where = f"{shown}:{call.lineno}"
        resources = kw.get("resources")
        count = kw.get(
            "instance_count", resources.get("instance_count", 1) if isinstance(resources, dict) else 1
        )
        env = kw.get("environment_variables")
        out += _job(where, cmd, kw.get("distribution"), count, env if isinstance(env, dict) else {})
    return out


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 100_000 else None


def _job(where: str, command: str, dist: Any, count: Any, env: dict[Any, Any]) -> list[JobLaunch]:
    job = JobLaunch(
        kind=KIND,
        source=where,
        command=command,
        env={str(k): str(v) for k, v in env.items() if v is not UNKNOWN},
    )
    job.nodes = _int(count)
    if job.nodes is None:
        job.unknown = f"its instance_count ({'not a literal' if count is UNKNOWN else count!r}) is not known"
        return finish(job, None, False)
    if dist is None:
        return finish(job, 1, False)
    if dist is UNKNOWN or not isinstance(dist, dict):
        job.unknown = "its distribution is not a literal envdoctor reads"
        return finish(job, None, False)
    kind = str(dist.get("type") or dist.get("__call__") or "").lower().replace("distribution", "")
    per = dist.get("process_count_per_instance", 1)
    if kind != "pytorch":
        job.unknown = (
            f"its {kind or 'unnamed'} distribution does not give each process torch.distributed's variables"
        )
        return finish(job, None, False)
    if _int(per) is None:
        job.unknown = (
            f"its process_count_per_instance ({'not a literal' if per is UNKNOWN else per!r}) is not known"
        )
        return finish(job, None, False)
    return finish(job, _int(per), True)
