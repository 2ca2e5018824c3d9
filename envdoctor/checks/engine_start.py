"""LAY021 / LAY022: how vLLM starts the engine a training script builds itself (``LLM(...)``).

The script's reading is ``plan.engine_start`` (its syntax tree, never run); the releases' facts
are ``rules/knowledge/vllm.yaml`` ``engine_process``: V1's EngineCore runs in its own process
(VLLM_ENABLE_V1_MULTIPROCESSING), started with fork unless VLLM_WORKER_MULTIPROC_METHOD says spawn
or torch's CUDA is initialised (vLLM then forces spawn). Two failures follow:

- spawn re-imports the script: module-level code outside an ``if __name__ == "__main__":`` guard
  that builds the engine builds it again in the child, and Python stops it (an error);
- ``torch.cuda.is_available()`` initialises the CUDA driver without torch's CUDA state: vLLM
  keeps fork, and the forked EngineCore cannot use CUDA (a warning: a call envdoctor does not
  follow may initialise torch's CUDA first, and vLLM then spawns).

LAY022: ``distributed_executor_backend="external_launcher"`` is vLLM's executor for engines a
torchrun-style launcher starts, one per rank: it reads ``int(os.environ["RANK"])`` (and
``LOCAL_RANK`` from 0.7.3) at engine start, which a plain ``python`` launch does not set.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.knowledge import beyond_horizon
from envdoctor.plan.layout import trainer_env

#: the catalogue entries (rules/knowledge/known_failures/) whose failures LAY021 foresees: triage
#: names them from a log (TRI011), this rule before the run, with the same fix
GUARD_ENTRY = "vllm-spawn-needs-main-guard"
IN_PROCESS = "VLLM_ENABLE_V1_MULTIPROCESSING"
METHOD = "VLLM_WORKER_MULTIPROC_METHOD"
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
BOOTSTRAP = (
    "An attempt has been made to start a new process before the current process has finished its "
    "bootstrapping phase"
)


def _guard_fix(where: str) -> str:
    """The catalogue's fix for the main guard (one text per failure), naming the statement."""
    from envdoctor.knowledge import known_failures

    entry = next((f for f in known_failures() if f.id == GUARD_ENTRY), None)
    said = (
        entry.fix
        if entry is not None
        else 'put the script\'s work in main() and call it under if __name__ == "__main__": main()'
    )
    return f"{said} (the module-level code from {where} on)"


def _v1(kb: dict[str, Any], version: str, env: dict[str, str]) -> str | None:
    """Why vLLM ``version`` runs V1's engine (a process of its own unless told otherwise), or
    None: it runs V0's in the caller's process (one GPU) or has no V1."""
    use_v1 = env.get("VLLM_USE_V1")
    if versions.at_least(version, kb.get("v1_only_since", "0.11.0")):
        return "V1, the only engine from 0.11.0"
    if versions.at_least(version, kb.get("v1_default_since", "0.8.0")):
        return None if use_v1 == "0" else "V1, the default from 0.8.0"
    if versions.at_least(version, kb.get("v1_multiprocessing_since", "0.6.5")):
        return "V1, asked for with VLLM_USE_V1=1" if use_v1 == "1" else None
    return None


@rule("LAY021")
def vllm_engine_process_start(ctx: Context) -> Iterator[Hit]:
    """The engine a script builds itself starts in a process its start method breaks."""
    script = ctx.plan.script
    es = script.engine_start if script is not None and not script.problem else None
    if es is None or es.backend != "":
        return  # external_launcher runs the engine in-process (vLLM sets it); a computed one: not known
    kb = ctx.kb.vllm.get("engine_process") or {}
    env = trainer_env(ctx.facts, ctx.plan.trainer)
    written = {k: v for k, (v, _) in es.env.items()}
    if env.get(IN_PROCESS) == "0" or written.get(IN_PROCESS) == "0":
        return
    version = ctx.version("vllm")
    if version is None:
        return  # no vLLM installed, declared or assumed: which engine starts is not known
    v1 = _v1(kb, version, {**env, **({"VLLM_USE_V1": "0"} if written.get("VLLM_USE_V1") == "0" else {})})
    if v1 is None:
        return
    past = beyond_horizon("vllm", version, ctx.kb)
    said = past.said() if past else f"vLLM {version}"
    sure = past is None  # past the releases read, what 0.33.0 does is assumed: a warning
    forced = es.cuda_init is not None and versions.at_least(
        version, kb.get("force_spawn_on_cuda_since", "0.7.0")
    )
    spawn = env.get(METHOD) == "spawn" or forced
    start = f"{es.engine} starts {said}'s EngineCore in a process of its own ({v1}; {IN_PROCESS} on)"
    in_process = Remedy(
        env_set={IN_PROCESS: "0"}, fix=f"export {IN_PROCESS}=0  # the engine runs in this process"
    )
    one_gpu = es.tensor_parallel == 1  # more GPUs: the workers still start as processes
    if spawn and es.unguarded:
        why = (
            f"{es.cuda_init} initialises torch's CUDA before it, so vLLM overrides {METHOD} to spawn"
            if forced
            else f"{METHOD}=spawn"
        )
        guard = _guard_fix(es.unguarded)
        main = script.path if script else "the script"
        yield hit(
            f"{start} with the spawn method ({why}); spawn re-imports {main} in the child, whose "
            f'module-level code at {es.unguarded} (outside an `if __name__ == "__main__":` guard) builds '
            f"the engine again there, and Python stops it ('{BOOTSTRAP}'): the engine never starts",
            fix=f"export {IN_PROCESS}=0 (the engine runs in this process), or {guard}" if one_gpu else guard,
            severity="error" if sure else "warning",
            remedy=[in_process] if one_gpu else None,
            engine=es.engine,
            unguarded=es.unguarded,
            spawn_reason=why,
        )
        return
    nvml = env.get(NVML_CHECK) == "1" or written.get(NVML_CHECK) == "1"
    if spawn or written.get(METHOD) == "spawn" or not es.cuda_probe or es.cuda_init or es.maybe_init or nvml:
        return
    remedies = [in_process] if one_gpu else []
    if not es.unguarded:
        remedies.append(
            Remedy(
                env_set={METHOD: "spawn"},
                fix=f"export {METHOD}=spawn  # the script's work runs under its __main__ guard",
            )
        )
    remedies.append(
        Remedy(
            env_set={NVML_CHECK: "1"},
            fix=f"export {NVML_CHECK}=1  # torch.cuda.is_available() asks NVML, not the driver",
        )
    )
    yield hit(
        f"{start} with the fork method: {es.cuda_probe} runs before it, and torch.cuda.is_available() "
        "initialises the CUDA driver (cuInit) but not torch's CUDA state, so vLLM keeps fork (it spawns only "
        "when torch.cuda.is_initialized()) and the forked EngineCore cannot initialise CUDA. Nothing run "
        "before it that envdoctor read initialises torch's CUDA (which would make vLLM spawn); calls into "
        "code it does not read are not seen",
        fix=" ; or ".join(r.fix for r in remedies),
        severity="warning",
        remedy=remedies,
        engine=es.engine,
        probe=es.cuda_probe,
    )


#: the first release with the external_launcher executor, and the variables it reads from which
#: release (vllm.yaml engine_process.external_launcher_reads; these where the file lacks them)
EXTERNAL_SINCE = "0.7.0"
RANK_READ_SINCE = {"RANK": "0.7.0", "LOCAL_RANK": "0.7.3"}


@rule("LAY022")
def vllm_external_launcher_without_ranks(ctx: Context) -> Iterator[Hit]:
    """external_launcher's engine in a process a plain ``python`` line starts, with no rank set."""
    script = ctx.plan.script
    es = script.engine_start if script is not None and not script.problem else None
    trainer = ctx.plan.trainer
    if es is None or es.backend != "external_launcher" or trainer is None or trainer.launcher != "python":
        return
    version = ctx.version("vllm")
    if version is None or not versions.at_least(version, EXTERNAL_SINCE):
        return
    env = trainer_env(ctx.facts, trainer)
    reads = (ctx.kb.vllm.get("engine_process") or {}).get("external_launcher_reads") or RANK_READ_SINCE
    missing = [
        k
        for k, since in reads.items()
        if versions.at_least(version, since) and k not in env and k not in es.rank_env
    ]
    if not missing:
        return
    past = beyond_horizon("vllm", version, ctx.kb)
    said = past.said() if past else f"vLLM {version}"
    line = trainer.raw
    target = trainer.script or (f"-m {trainer.module}" if trainer.module else "")
    if not target:
        return  # what the line runs is not known: no launch to rewrite
    prefix = [f"{k}={shlex.quote(v)}" for k, v in trainer.env.items()]
    words = [*prefix, "torchrun", "--nproc_per_node", str(es.tensor_parallel or 1), target]
    torchrun = " ".join([*words, *(shlex.quote(a) for a in trainer.script_args)])
    lines = tuple(lx.raw for lx in ctx.plan.launches if lx is not trainer)
    yield hit(
        f"{es.engine} asks {said} for distributed_executor_backend='external_launcher', the executor "
        "for engines a torchrun-style launcher starts (one per rank): it reads "
        + " and ".join(f"int(os.environ['{k}'])" for k in missing)
        + f" at engine start, and `{line}` starts a plain Python process that sets neither, nor does the "
        f"environment or the code read: KeyError: '{missing[0]}' before the engine loads",
        fix=f"{torchrun}  # torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; "
        "or drop distributed_executor_backend for one process (vLLM then starts its own engine)",
        severity="error" if past is None else "warning",
        remedy=Remedy(launch=(*lines, torchrun), fix=f"{torchrun}  # one process per tensor-parallel rank"),
        engine=es.engine,
        missing=missing,
    )
