"""The processes one node of a job runs: the command a launcher starts there (``copies`` of it,
with the variables the launcher sets), counted as its own launcher counts them."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from envdoctor.plan.launchers import JobLaunch

_VAR = re.compile(r"^\$(\w+)$|^\$\{(\w+)\}$")


def _number(raw: Any, env: dict[str, str], gpus: int | None) -> tuple[int | None, str | None]:
    """A count as written (``8``, ``$SKYPILOT_NUM_GPUS_PER_NODE``, ``gpu`` / ``auto``)."""
    text = str(raw).strip()
    m = _VAR.match(text)
    if m:
        name = m.group(1) or m.group(2)
        if name not in env:
            return None, f"{text} is left to the job's environment"
        text = env[name].strip()
    if text in ("gpu", "auto"):
        return (gpus, None) if gpus else (None, f"{raw} is one per GPU and the job's GPUs are not known")
    if text.isdigit() and 0 < int(text) < 100_000:
        return int(text), None
    return None, f"{raw} is not a number envdoctor reads"


def runs(command: str, env: dict[str, str]) -> list[Any]:
    """The launches of ``command`` that run a Python script or module (no server)."""
    import shlex

    from envdoctor.errors import InputError
    from envdoctor.plan.launch import parse_launches

    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items() if re.fullmatch(r"\w+", k))
    try:
        launches = parse_launches(exports + command)
    except InputError:
        return []
    return [lx for lx in launches if not lx.is_server and (lx.script or lx.module)]


def finish(job: JobLaunch, copies: int | None, sets_torch_env: bool, why_copies: str = "") -> list[JobLaunch]:
    """One job per launch line of ``job.command`` that runs a script, each with ``per_node``
    from that line, started ``copies`` times on each node by the launcher (``sets_torch_env``:
    the launcher gives each copy RANK / LOCAL_RANK / WORLD_SIZE)."""
    if job.command is None:
        return [job]
    if job.unknown:
        named = [
            replace(job, command=lx.raw, scripts=(lx.script or lx.module,))
            for lx in runs(job.command, job.env)
        ]
        return named or [job]
    out = [
        _one(replace(job, command=lx.raw), lx, copies, sets_torch_env, why_copies)
        for lx in runs(job.command, job.env)
    ]
    if not out and job.scripts:  # a command envdoctor does not read, for a script it names
        job.unknown = f"`{job.command[:120]}` runs no Python script envdoctor reads"
        return [job]
    return out


def _one(job: JobLaunch, lx: Any, copies: int | None, sets_torch_env: bool, why_copies: str) -> JobLaunch:
    name = lx.script or lx.module or ""
    job.scripts = (*job.scripts, name) if name not in job.scripts else job.scripts
    if lx.unresolved:
        job.unknown = lx.unresolved
        return job
    if job.kind.startswith("Slurm") and lx.placed_by is None:
        job.nodes = 1  # a batch script's line outside srun runs once, on the first node
    nodes = job.nodes or 1
    if lx.launcher == "python":
        if copies is None:
            job.unknown = why_copies or "how many copies of the script it starts is not known"
        elif copies > 1 and not sets_torch_env:
            job.unknown = (
                f"it starts {copies} copies of `{name}` on each node without torch.distributed's "
                "variables; whether they form one job is up to the script"
            )
        elif nodes > 1 and not sets_torch_env:
            job.unknown = f"it runs `{name}` on {nodes} nodes without torch.distributed's variables"
        else:
            job.per_node, job.distributed = copies, sets_torch_env and (copies > 1 or nodes > 1)
        return job
    if copies not in (None, 1):
        job.unknown = (
            f"it starts {copies} copies of {lx.launcher} on each node (each would start its own processes)"
        )
        return job
    per, why = _launcher_count(lx, job.env, job.gpus_per_node)
    job.per_node, job.unknown = per, why
    job.distributed = per is not None
    return job


def _launcher_count(lx: Any, env: dict[str, str], gpus: int | None) -> tuple[int | None, str | None]:
    opts = lx.options
    if lx.launcher == "torchrun":
        raw = opts.get("nproc_per_node", env.get("PET_NPROC_PER_NODE", 1))
        return _number(raw, env, gpus)
    if lx.launcher == "deepspeed":
        raw = opts.get("num_gpus", opts.get("num_accelerators"))
        return _number(raw, env, gpus) if raw is not None else _number("gpu", env, gpus)
    if lx.launcher == "accelerate" or lx.launcher.startswith("trl-"):
        if "num_processes" not in opts:
            if opts.get("config_file") or opts.get("accelerate_config"):
                return None, "its accelerate config sets the process count (not read for a job)"
            return _number("gpu", env, gpus)
        total, why = _number(opts["num_processes"], env, gpus)
        machines, why2 = _number(opts.get("num_machines", 1), env, gpus)
        if total is None or machines is None:
            return None, why or why2
        return max(total // machines, 1), None
    return None, f"{lx.launcher} is not a launcher envdoctor counts"
