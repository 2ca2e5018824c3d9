"""This process's place in the torch.distributed job, from the launcher's variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from envdoctor.coerce import as_int
from envdoctor.errors import InputError

NEEDED = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
HOW = (
    "launch it with torchrun, e.g. `torchrun --nproc_per_node 2 -m envdoctor check "
    "--distributed` (docs/cluster.md)"
)


@dataclass(frozen=True)
class JobEnv:
    """RANK / WORLD_SIZE / LOCAL_RANK / GROUP_RANK as torchrun (and accelerate launch) set them."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int | None  # GROUP_RANK (torchrun) or NODE_RANK; None: group by host
    master: str
    launcher: str

    @property
    def leader(self) -> bool:
        """The process that collects its node's full facts (local rank 0)."""
        return self.local_rank == 0


def _env_int(env: Mapping[str, str], name: str, default: int | None = None) -> int | None:
    """The integer in variable ``name``; ``default`` when it is unset or empty."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    value = as_int(raw)
    if value is None:
        raise InputError(name, f"expected an integer, got {raw!r}")
    return value


def launcher_of(env: Mapping[str, str]) -> str:
    if any(k.startswith("ACCELERATE_") for k in env):
        return "accelerate launch"
    if "TORCHELASTIC_RUN_ID" in env:
        return "torchrun"
    if "SLURM_JOB_ID" in env:
        return "srun"
    return "environment variables"


def job_env(environ: Mapping[str, str] | None = None) -> JobEnv:
    """The job this process belongs to; ``InputError`` when it is not inside one."""
    env = os.environ if environ is None else environ
    missing = [k for k in NEEDED if not env.get(k)]
    if missing:
        raise InputError(
            "--distributed", f"not inside a torch.distributed job ({', '.join(missing)} not set): {HOW}"
        )
    rank, world = _env_int(env, "RANK"), _env_int(env, "WORLD_SIZE")
    assert rank is not None and world is not None
    if world < 1 or not 0 <= rank < world:
        raise InputError("RANK", f"rank {rank} outside a world of {world}")
    local = _env_int(env, "LOCAL_RANK", rank)
    local_world = _env_int(env, "LOCAL_WORLD_SIZE", world)
    node = _env_int(env, "GROUP_RANK", None)
    if node is None:
        node = _env_int(env, "NODE_RANK", None)
    assert local is not None and local_world is not None
    return JobEnv(
        rank=rank,
        world_size=world,
        local_rank=local,
        local_world_size=local_world,
        node_rank=node,
        master=f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}",
        launcher=launcher_of(env),
    )
