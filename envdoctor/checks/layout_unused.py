"""GPUs the run is given but does not use: training GPUs no rank takes (LAY015), a vLLM server the
trainer never asks because it generates in its own process (LAY016)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.layout import _procs_flag, _with_env, launch_remedy, with_option
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy


def _chosen(ctx: Context) -> str | None:
    """How the trainer's GPUs were chosen on purpose: a CUDA_VISIBLE_DEVICES the line or the
    shell sets, or accelerate's gpu_ids; None when it sees every GPU of the machine by default."""
    src = ctx.layout.visible_source
    return src if src.startswith(("CUDA_VISIBLE_DEVICES=", "--gpu_ids")) else None


@rule("LAY015", needs=("gpus", "trl-layout"))
def idle_training_gpus(ctx: Context) -> Iterator[Hit]:
    """A distributed launch whose processes take fewer GPUs than the trainer was given: rank i
    takes visible GPU i, the others stay idle (no DataParallel under a distributed launch)."""
    lay = ctx.layout
    trainer = ctx.plan.trainer
    chosen = _chosen(ctx)
    if trainer is None or chosen is None or lay.num_machines != 1 or not lay.problems.get("distributed"):
        return
    if lay.generation_unknown:
        return  # the script decides use_vllm / vllm_mode at run time: the GPU may be vLLM's
    used = set(lay.training) | set(lay.generation)
    if lay.server is not None:
        used |= set(lay.server.gpus)
    idle = [g for g in lay.visible if g not in used]
    if not idle or lay.num_processes >= len(lay.visible):
        return
    device = str(ctx.plan.config.get("vllm_device") or "")
    if device == "auto" or device.removeprefix("cuda:").isdigit():
        # an in-process engine placed on a GPU of its own (TRL 0.14-0.16 and the forks that keep
        # ``vllm_device``): whether the running TRL honours the key is CFG001's to say
        return
    server = ctx.plan.server
    split = (
        server is not None and lay.generation_mode == "server" and not set(lay.generation) & set(lay.visible)
    )
    want = len(lay.visible) - len(set(lay.generation) & set(lay.visible))
    line = with_option(trainer, _procs_flag(lay.launcher), str(want))
    narrow = _with_env(trainer.raw, "CUDA_VISIBLE_DEVICES", ",".join(map(str, lay.training)))
    count = f"{lay.num_processes} training process{'es' * (lay.num_processes != 1)}"
    beside = f"; the vLLM server has GPU(s) {','.join(map(str, lay.generation))} of its own" if split else ""
    yield hit(
        f"{count} but the trainer is given GPUs {','.join(map(str, lay.visible))} ({chosen}){beside}: "
        f"each rank takes one visible GPU, so GPU(s) {','.join(map(str, idle))} stay idle and "
        f"the whole batch lands on {len(lay.training)} GPU(s): it trains as on {len(lay.training)} GPU(s), "
        "slower, and out of memory sooner",
        fix=f"{line}  # one rank per training GPU; or make only the GPUs it trains on visible: {narrow}",
        # idle capacity: the run trains correctly on the GPUs its ranks take (their memory is the
        # memory rules' to judge)
        severity="warning",
        remedy=[
            launch_remedy(ctx, line, fix=f"{line}  # one rank per training GPU"),
            launch_remedy(ctx, narrow, fix=f"{narrow}  # only the GPUs it trains on"),
        ],
        processes=lay.num_processes,
        visible=lay.visible,
        idle=idle,
    )


#: the first TRL release with ``vllm_mode``: Unsloth's patched GRPOTrainer sets it to colocate
#: when the model carries its own vLLM engine (unslothai/unsloth unsloth/models/rl.py)
MODES_SINCE = "0.18.0"


@rule("LAY016", needs=("vllm", "trl-layout"))
def in_process_vllm_ignores_server(ctx: Context) -> Iterator[Hit]:
    """The script loads the model with Unsloth's fast_inference=True (vLLM inside the training
    process) while the run configures server mode or starts a server: the server is not used."""
    script = ctx.plan.script
    if script is None or script.problem or not script.vllm_in_process:
        return
    mode = ctx.config.get("vllm_mode")
    server = ctx.plan.server
    if mode != "server" and server is None:
        return
    said = []
    if mode == "server":
        said.append("`vllm_mode: server`")
    if server is not None:
        said.append(f"a `{server.raw}` line")
    modes = versions.at_least(ctx.trl.version, MODES_SINCE)
    keys = tuple(k for k in ctx.config if k.startswith("vllm_server_") or k == "vllm_mode")
    trainer = ctx.plan.trainer
    lines = tuple(lx.raw for lx in ctx.plan.launches if not lx.is_server) or (
        (trainer.raw,) if trainer else ()
    )
    colocate = Remedy(
        config_set={"vllm_mode": "colocate"} if modes else {},
        config_remove=tuple(k for k in keys if k != "vllm_mode" or not modes),
        launch=lines if server is not None else None,
        fix="drop the server: vllm_mode: colocate (what runs now) and no `trl vllm-serve` line",
    )
    yield hit(
        f"{script.vllm_in_process} starts vLLM inside the training process, and Unsloth's patched "
        f"GRPOTrainer generates with that engine"
        + (" (it sets vllm_mode='colocate' when the model carries one)" if modes is not False else "")
        + f": {' and '.join(said)} are not used; generation runs on the training GPU and the "
        "server's GPU idles",
        fix="to use the server, load the model with fast_inference=False; else drop the server "
        "(vllm_mode: colocate, no `trl vllm-serve`)",
        severity=ctx.on_trl("error") if modes else "warning",
        remedy=colocate,
        where=script.vllm_in_process,
        configured=said,
    )
