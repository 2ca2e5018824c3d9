"""A Slurm batch script's ``#SBATCH`` options and the variables sbatch sets from them (sbatch(1),
OUTPUT ENVIRONMENT VARIABLES: https://slurm.schedmd.com/sbatch.html); read by the launch parser
(``sbatch job.slurm``, a batch script's text) and by the Slurm job reader."""

from __future__ import annotations

import re
import shlex

_DIRECTIVE = re.compile(r"^#SBATCH\s+(.*)$")


def sbatch_options(text: str) -> dict[str, str]:
    """The ``#SBATCH`` options before the first command (sbatch stops reading them there)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or (line.startswith("#") and not line.startswith("#SBATCH")):
            continue
        m = _DIRECTIVE.match(line)
        if m is None:
            break
        try:
            words = shlex.split(m.group(1), comments=True)
        except ValueError:
            continue
        i = 0
        while i < len(words):
            word = words[i]
            i += 1
            if word.startswith("--"):
                name, eq, value = word[2:].partition("=")
            elif word.startswith("-") and len(word) >= 2:
                name, value, eq = word[1], word[2:], "=" if len(word) > 2 else ""
            else:
                continue
            if not eq and i < len(words) and not words[i].startswith("-"):
                value = words[i]
                i += 1
            out[{"N": "nodes", "n": "ntasks", "G": "gpus"}.get(name, name)] = value
    return out


def count_of(text: str | None) -> int | None:
    if text is None:
        return None
    tail = text.split("-")[-1].split(":")[-1]  # --nodes 2-4: up to 4; --gpus-per-node h100:8
    return int(tail) if tail.isdigit() and 0 < int(tail) < 100_000 else None


def allocation_env(opts: dict[str, str]) -> dict[str, str]:
    """The variables sbatch sets for the allocation's counts that ``opts`` give."""
    env: dict[str, str] = {}
    nodes = count_of(opts.get("nodes"))
    per = count_of(opts.get("ntasks-per-node"))
    tasks = count_of(opts.get("ntasks"))
    if nodes is not None:
        env["SLURM_NNODES"] = env["SLURM_JOB_NUM_NODES"] = str(nodes)
    if per is not None:
        env["SLURM_NTASKS_PER_NODE"] = str(per)
    if tasks is None and per is not None:
        tasks = per * (nodes or 1)
    if tasks is not None:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(tasks)
    gpus = gpus_of(opts)
    if gpus is not None:
        env["SLURM_GPUS_ON_NODE"] = str(gpus)
    return env


def gpus_of(opts: dict[str, str]) -> int | None:
    if "gpus-per-node" in opts:
        return count_of(opts["gpus-per-node"])
    gres = opts.get("gres", "")
    m = re.search(r"\bgpu(?::[\w.-]+)?:(\d+)\b", gres)
    if m:
        return int(m.group(1))
    return 1 if re.fullmatch(r"gpu(:[A-Za-z][\w.-]*)?", gres) else None
