"""Slurm batch scripts: the ``#SBATCH`` options of the allocation (``--nodes``,
``--ntasks-per-node``, ``--ntasks``, ``--gpus-per-node``, ``--gres=gpu:N``) and the script's
launch lines.

sbatch sets SLURM_NNODES / SLURM_JOB_NUM_NODES, SLURM_NTASKS_PER_NODE and SLURM_NTASKS from them
(sbatch(1), OUTPUT ENVIRONMENT VARIABLES: https://slurm.schedmd.com/sbatch.html), and an ``srun``
inside the allocation without task options takes its tasks from those variables (srun(1), INPUT
ENVIRONMENT VARIABLES: https://slurm.schedmd.com/srun.html): ``srun torchrun …`` then starts one
torchrun per task. A launch line outside srun runs once, on the first node.
"""

from __future__ import annotations

from envdoctor.plan.launchers import JobLaunch
from envdoctor.plan.launchers.counts import finish
from envdoctor.plan.launchers.sbatch import allocation_env, count_of, gpus_of, sbatch_options

KIND = "Slurm batch script"


def read(text: str, shown: str) -> list[JobLaunch]:
    opts = sbatch_options(text)
    if not opts:
        return []
    env = allocation_env(opts)
    job = JobLaunch(kind=KIND, source=shown, env=env, gpus_per_node=gpus_of(opts))
    job.nodes = count_of(opts.get("nodes")) or 1
    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    job.command = body
    return finish(job, 1, False)
