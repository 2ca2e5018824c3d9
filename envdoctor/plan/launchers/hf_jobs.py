"""Hugging Face Jobs started from Python: ``huggingface_hub.run_job(image=…, command=[…],
flavor="a100x4")`` runs the command once in a container with the flavor's GPUs
(https://huggingface.co/docs/huggingface_hub/guides/jobs); the CLI form ``hf jobs run`` is a
wrapper of the launch line (``plan/wrappers.py``)."""

from __future__ import annotations

import re
import shlex

from envdoctor.plan.launchers import JobLaunch
from envdoctor.plan.launchers.counts import finish
from envdoctor.plan.launchers.pysource import UNKNOWN, calls, constants, keywords, parse

KIND = "Hugging Face job"


def flavor_gpus(flavor: str) -> int | None:
    """GPUs of a Jobs hardware flavor (``a100x4``: 4, ``a10g-large``: 1, ``cpu-basic``: 0)."""
    if flavor.startswith("cpu"):
        return 0
    m = re.search(r"x(\d+)$", flavor)
    return int(m.group(1)) if m else 1


def read(text: str, shown: str) -> list[JobLaunch]:
    tree = parse(text)
    if tree is None:
        return []
    consts = constants(tree)
    out: list[JobLaunch] = []
    for call in calls(tree, {"run_job"}):
        kw = keywords(call, consts)
        cmd, flavor = kw.get("command"), kw.get("flavor", "cpu-basic")
        if isinstance(cmd, list) and all(isinstance(a, (str, int, float)) for a in cmd):
            command = shlex.join(str(a) for a in cmd)
        else:
            continue
        if len(cmd) >= 3 and cmd[0] in ("bash", "sh") and cmd[1] in ("-c", "-lc"):
            command = str(cmd[2])
        job = JobLaunch(kind=KIND, source=f"{shown}:{call.lineno}", command=command, nodes=1)
        if flavor is UNKNOWN or not isinstance(flavor, str):
            job.unknown = "its flavor is not a literal"
            out += finish(job, None, False)
            continue
        job.gpus_per_node = flavor_gpus(flavor) or None
        out += finish(job, 1, False)
    return out
