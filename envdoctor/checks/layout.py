"""Rules on the GPU split: who trains where, where vLLM generates, and the DataParallel trap."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context, unsloth_has
from envdoctor.checks.layout_replica import (
    DEFAULT_SHARE,
    DELIBERATE_SHARE,
    ReplicaFit,
    replica_fit,
    set_share,
)
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import Remedy
from envdoctor.knowledge import release_said
from envdoctor.plan.interface import COMPUTED, GpuLayout, Launch, TrainingScript
from envdoctor.plan.shell_words import join as shell_join

#: vLLM's /server_info (its whole config as JSON) may be read up to this size; other answers 64 KiB
SERVER_INFO_BYTES = 1 << 20


def with_option(launch: Launch | None, name: str, value: str) -> str:
    """The launch line with ``--name value`` set (replaced or added after the launcher)."""
    if launch is None:
        return f"accelerate launch --{name} {value} train.py"
    argv = shlex.split(launch.raw)
    flags = (f"--{name}", f"--{name.replace('_', '-')}")
    for i, tok in enumerate(argv):
        if tok in flags and i + 1 < len(argv):
            argv[i + 1] = value
            return shell_join(argv)
        for flag in flags:
            if tok.startswith(flag + "="):
                argv[i] = f"{flag}={value}"
                return shell_join(argv)
    pos = argv.index(launch.program[-1]) + 1 if launch.program and launch.program[-1] in argv else len(argv)
    argv[pos:pos] = [f"--{name}", value]
    return shell_join(argv)


def run_lines(ctx: Context, trainer: str | None = None, server: str | None = None) -> tuple[str, ...]:
    """Every line of the run as ``check`` takes them (server lines first, the trainer's last),
    with the trainer's and / or the server's line replaced."""
    out = []
    for lx in sorted(ctx.plan.launches, key=lambda lx: not lx.is_server):
        if trainer is not None and lx is ctx.plan.trainer:
            out.append(trainer)
        elif server is not None and lx is ctx.plan.server:
            out.append(server)
        else:
            out.append(lx.raw)
    if trainer is not None and ctx.plan.trainer is None:
        out.append(trainer)
    return tuple(dict.fromkeys(out))


def launch_remedy(ctx: Context, line: str, fix: str = "", server: bool = False) -> Remedy:
    """A remedy that runs ``line`` instead of the trainer's (or the server's) line."""
    lines = run_lines(ctx, server=line) if server else run_lines(ctx, trainer=line)
    return Remedy(launch=lines, fix=fix or line)


def _with_env(line: str, key: str, value: str) -> str:
    """``line`` with the leading assignment ``key=value`` (replaced, or put first)."""
    argv = shlex.split(line)
    i = 0
    while i < len(argv) and "=" in argv[i] and argv[i].split("=", 1)[0].isidentifier():
        if argv[i].split("=", 1)[0] == key:
            argv[i] = f"{key}={value}"
            return shell_join(argv)
        i += 1
    return shell_join([f"{key}={value}", *argv])


def _without_flag(launch: Launch | None, flag: str) -> str | None:
    """The launch line without the switch ``flag`` (both spellings), None when it has none."""
    if launch is None:
        return None
    argv = shlex.split(launch.raw)
    kept = [t for t in argv if t not in (flag, flag.replace("_", "-"))]
    return shell_join(kept) if len(kept) < len(argv) else None


def _procs_flag(launcher: str) -> str:
    """The launcher's flag for the process count per machine."""
    return {"torchrun": "nproc_per_node", "deepspeed": "num_gpus"}.get(launcher, "num_processes")


def _with_ranks(ctx: Context, n: int) -> str:
    """The trainer's line with ``n`` ranks per node. One rank under accelerate (or python) sets up
    no distributed environment, so that process sees every GPU: the nn.DataParallel trap (LAY003,
    measured); there it is LAY003's own one-rank line (torchrun, every GPU still visible)."""
    lay, launch = ctx.layout, ctx.plan.trainer
    # an accelerate config (DeepSpeed, FSDP) that torchrun's line would drop: the line keeps it
    plain = launch is not None and not set(launch.options) & {"config_file", "use_deepspeed", "use_fsdp"}
    if n == 1 and plain and lay.launcher in ("accelerate", "python") and lay.generation_mode == "legacy":
        return _one_rank_per_gpu(lay, launch, lay.visible[:1], lay.generation).split("  # ")[0]
    return with_option(launch, _procs_flag(lay.launcher), str(n))


@rule("LAY001", needs=("gpus", "vllm", "trl-layout"))
def vllm_device_unavailable(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    problem = lay.problems.get("vllm_device")
    if not problem or lay.vllm_device == "auto":
        return
    n = problem["visible"]
    yield hit(
        f"The requested device for vllm ({problem['requested']}) is not available: the "
        f"training processes see {n} GPU(s) (cuda:0–cuda:{max(n - 1, 0)}), so TRL raises "
        "at init",
        fix=f"set vllm_device: auto, or cuda:{lay.world_size} with "
        f"{lay.world_size + 1} GPUs visible (e.g. add one to --gpu_ids / "
        "CUDA_VISIBLE_DEVICES)",
        remedy=Remedy(config_set={"vllm_device": "auto"}, fix="set vllm_device: auto"),
        by_hand=f"make {lay.world_size + 1} GPUs visible for vllm_device cuda:{lay.world_size} (add one "
        "to --gpu_ids / CUDA_VISIBLE_DEVICES)",
        **problem,
    )


@rule("LAY002", needs=("gpus", "vllm", "trl-layout"))
def no_gpu_for_generation(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    problem = lay.problems.get("vllm_device")
    if not problem or lay.vllm_device != "auto":
        return
    n = problem["visible"]
    remedy = None
    if n > 1 and lay.world_size >= n:
        line = _with_ranks(ctx, n - 1)
        fix = "leave one GPU for vLLM: " + line
        remedy = launch_remedy(ctx, line, fix) if ctx.plan.trainer else None
    else:
        fix = f"make {lay.world_size + 1} GPUs visible (one more than the training processes)"
    yield hit(
        f"no GPU left for vLLM: {lay.world_size} training process(es) on {n} visible "
        f"GPU(s), and vllm_device=auto picks {problem['requested']}, which does not exist "
        '(TRL: "The requested device for vllm … is not available")',
        fix=fix,
        remedy=remedy,
        **problem,
    )


def _no_trainer(script: TrainingScript) -> bool:
    """The script read (with the repository modules it imports) builds no trainer of any package
    and nothing of TRL's: a training loop of its own, which places its model itself (set 22's
    qwen_math_grpo: policy on cuda:0, vLLM on cuda:1; LAY003's torchrun relaunch would have started
    two loops)."""
    return not (
        script.builds_trainer
        or script.builds_grpo
        or script.grpo_in_module
        or script.own_trainer
        or script.unread_trainer
        or script.trl_import
        or script.config_class is not None
        or script.hydra_config
    )


@rule("LAY003", needs=("gpus", "cuda", "trl-layout"))
def dataparallel_trap(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    if lay.problems.get("distributed") or lay.process_gpus < 2 or not (ctx.plan.trainer or ctx.config):
        return
    trl = ctx.version("trl")
    launch = ctx.plan.trainer
    # a GPU of its own for vLLM (server / legacy); colocate shares the training GPU
    gen = lay.generation if lay.generation_mode in ("legacy", "server") else []
    # the model by name or path: `trl grpo`, TRL's grpo.py run by python, a script whose
    # GRPOTrainer(...) calls get a name (script_reader)
    script = (launch.script or "").replace("\\", "/") if launch else ""
    by_path = lay.launcher.startswith("trl-") or bool(
        launch and (launch.module == "trl.scripts.grpo" or script.endswith("trl/scripts/grpo.py"))
    )
    by_path = by_path or bool(ctx.plan.script and ctx.plan.script.model_by_name)
    splits = ctx.kb.feature("model_path_device_map_auto", trl)
    refuses = ctx.kb.feature("dataparallel_refusal", trl)
    read = ctx.plan.script if ctx.plan.script is not None and not ctx.plan.script.problem else None
    if read is not None and _no_trainer(read):
        return  # a loop of its own: no Trainer to wrap the model in nn.DataParallel
    split = read.model_split if read is not None else None
    fit = _replica_fit(ctx, gen, splits, refuses) if split is None else None
    what = _one_process_outcome(ctx, trl, gen, by_path, splits, refuses, fit)
    severity = fit.severity if fit else "warning" if by_path and splits and not gen else None
    unsloth_one_gpu = False  # Unsloth keeps the model off nn.DataParallel (none installed: no patch)
    if split == "spread":  # Trainer keeps n_gpu 1 for a model split with device_map: no wrap
        what = (
            "the script loads its model with a device_map over the GPUs, and transformers.Trainer keeps "
            "n_gpu at 1 for a model split across devices (no nn.DataParallel, no refusal): it trains "
            "one GPU at a time"
            + (
                f", with layers on GPU {', '.join(map(str, gen))} reserved for vLLM, taking memory it needs"
                if gen
                else " (model parallelism, as meant)"
            )
        )
        severity = "warning" if gen else "info"
    elif unsloth_one_gpu := unsloth_has(ctx, "unsloth_no_dataparallel", when_missing=False):
        what = (
            "the script loads its model with Unsloth, which marks it so that transformers.Trainer does "
            "not wrap it in nn.DataParallel: it trains on one GPU and the others sit idle"
        )
        severity = "info"
    elif split == "unknown":  # a computed device_map: the wrap is not certain
        what += (
            "; the script computes the device_map it loads the model with: where that map spreads the "
            "model over the GPUs, Trainer keeps n_gpu at 1 and none of this happens"
        )
        severity = "warning"
    gpus = ",".join(str(g) for g in lay.visible)
    train = [g for g in lay.visible if g not in gen] or lay.visible[:1]
    fix = _one_rank_per_gpu(lay, launch, train, gen)
    ddp, _, one = fix.partition("  # one rank per GPU; or ")
    if split != "spread" and unsloth_one_gpu and one:
        # it runs as is on one GPU; one rank per GPU only where the Unsloth release trains with DDP
        fix = (
            f"{one}  # the GPU it trains on, alone; one rank per GPU where its Unsloth release "
            f"trains with DDP: {ddp}"
        )
    if split == "spread":  # one process, the model split over the training GPUs alone
        script = (launch.script or (f"-m {launch.module}" if launch.module else "")) if launch else ""
        args = shlex.join(launch.script_args) if launch and launch.script_args else ""
        keep = f"CUDA_VISIBLE_DEVICES={','.join(map(str, train))} python {script} {args}".strip()
        fix = (
            f"{_with_env_words(_leading_env(launch), keep)}  # the model split over the training GPUs only"
            if gen and script
            else "nothing, where the model needs the GPUs together; where it fits one GPU, one rank per "
            f"GPU trains faster: {fix.split('  # ')[0]}"
        )
    lines = [line.split("  # ")[0] for line in [fix, fix.partition("  # one rank per GPU; or ")[2]] if line]
    if split == "spread" and not (gen and launch and launch.script):
        lines = []  # advice, not a change to make
    yield hit(
        f"one training process sees {lay.process_gpus} GPUs ({gpus}; launcher: "
        f"{lay.launcher}{', --num_processes 1' if lay.launcher == 'accelerate' else ''}): "
        f"{what}",
        fix=fix,
        remedy=[launch_remedy(ctx, line, fix if i == 0 else line) for i, line in enumerate(lines)],
        severity=severity,
        model_split=split,
        n_gpu=lay.process_gpus,
        visible=lay.visible,
        trl=trl,
        refuses=refuses,
        splits=splits,
        **(fit.evidence if fit else {}),
    )


def _replica_fit(
    ctx: Context, gen: list[int], splits: bool | None, refuses: bool | None
) -> ReplicaFit | None:
    """Where TRL certainly lets Trainer wrap the model in nn.DataParallel silently (before the
    refusal; before the split by path, or a script read that passes a model object) and a GPU is
    reserved for vLLM: whether a replica fits beside vLLM's share there (layout_replica). None
    otherwise (TRL not known, refused at init, the model split by device_map="auto")."""
    if not gen or refuses is not False or splits is None:
        return None
    script = ctx.plan.script
    if splits and not (script is not None and not script.problem and script.model_by_name is False):
        return None  # the model may be passed by name: split over the GPUs, not wrapped
    return replica_fit(ctx, gen)


def _one_process_outcome(
    ctx: Context,
    trl: str | None,
    gen: list[int],
    by_path: bool,
    splits: bool | None,
    refuses: bool | None,
    fit: ReplicaFit | None = None,
) -> str:
    """What TRL ``trl`` does with one process that sees several GPUs (LAY003's message), naming
    the TRL trainer the script builds (TRL's refusal names ``type(self).__name__``)."""
    n = ctx.layout.process_gpus
    script = ctx.plan.script
    other = script.trl_other_trainer if script is not None and not script.problem else None
    trainer = other.split(", ")[0] if other else "GRPOTrainer"
    said = release_said("trl", trl, ctx.kb)  # past the horizon: the newest release it knows
    if fit is not None:
        return (
            f"{said} lets transformers.Trainer silently wrap the model in nn.DataParallel over all"
            f" {n} GPUs, including GPU {', '.join(map(str, gen))} reserved for vLLM: each step's batch"
            f" is per_device_train_batch_size × {n}, the GPUs' time is shared with generation and a"
            f" replica with its activations lands beside vLLM; {fit.text}"
        )
    victims = f" — including GPU {', '.join(map(str, gen))} reserved for vLLM" if gen else ""
    since = ctx.kb.feature_entry("dataparallel_refusal").get("since", "a newer release")
    split_since = ctx.kb.feature_entry("model_path_device_map_auto").get("since", "a newer release")
    if splits and by_path:
        return (
            f'{said} loads model_name_or_path with device_map="auto" and splits it over'
            f" all {n} GPUs{victims}, so it trains one GPU at a time"
            + ("; its layers and activations take memory vLLM needs there" if gen else "")
        )
    if splits:
        obj = (
            f'{said} refuses a model object the script builds at init ("{trainer} does'
            ' not support `nn.DataParallel`")'
            if refuses
            else f"{said} lets transformers.Trainer silently wrap a model object the script "
            f"builds in nn.DataParallel over all {n} GPUs{victims} (replicas run out of "
            "memory later)"
        )
        return (
            f"{obj}; a model passed to {trainer} by name or path is instead split over "
            f'all {n} GPUs{victims if refuses else ""} (device_map="auto") and trains one'
            " GPU at a time"
        )
    if splits is None:
        return (
            f"transformers.Trainer wraps the model in nn.DataParallel over all {n} GPUs"
            f"{victims}: TRL before {since} lets it happen silently (replicas land there and "
            f"it runs out of memory later), TRL {since}+ refuses at init; from TRL "
            f"{split_since} a model passed by name or path is instead split over the GPUs "
            'with device_map="auto" and trains one GPU at a time'
        )
    return (
        f"{said if trl else 'older TRL'} lets transformers.Trainer silently wrap "
        f"the model in nn.DataParallel over all {n} GPUs{victims}; replicas and "
        "activations land there and it runs out of memory later"
    )


def _leading_env(launch: Launch | None) -> str:
    """The variables the launch line sets before its command (but CUDA_VISIBLE_DEVICES), as written
    there, with a trailing space: a rebuilt line keeps them (VLLM_SERVER_HOST=… python …)."""
    if launch is None:
        return ""
    kept = []
    for tok in shlex.split(launch.raw):
        name = tok.split("=", 1)[0]
        if "=" not in tok or not name.isidentifier():
            break
        if name != "CUDA_VISIBLE_DEVICES":
            kept.append(tok)
    return shell_join(kept) + " " if kept else ""


def _one_rank_per_gpu(lay: GpuLayout, launch: Launch | None, train: list[int], gen: list[int]) -> str:
    """LAY003's fix: the launch line with one rank per training GPU (or one GPU visible)."""
    fix = _one_rank_fix(lay, launch, train, gen)
    env = _leading_env(launch)
    if not env:
        return fix
    head, sep, alt = fix.partition("  # one rank per GPU; or ")
    return f"{_with_env_words(env, head)}{sep}{_with_env_words(env, alt) if alt else ''}"


def _with_env_words(env: str, line: str) -> str:
    """``line`` with ``env`` (assignments) after its own leading CUDA_VISIBLE_DEVICES, if any."""
    if line.startswith("CUDA_VISIBLE_DEVICES="):
        first, _, rest = line.partition(" ")
        return f"{first} {env}{rest}"
    return env + line


def _one_rank_fix(lay: GpuLayout, launch: Launch | None, train: list[int], gen: list[int]) -> str:
    visible = ",".join(map(str, train))
    if launch is not None and launch.launcher.startswith("trl-"):
        own = replace(launch, raw=shell_join(launch.program + launch.script_args))
        line = with_option(own, "num_processes", str(len(train)))
        if gen:
            return f"CUDA_VISIBLE_DEVICES={visible} {line}"
        return (
            f"{line}  # one rank per GPU; or CUDA_VISIBLE_DEVICES={train[0]} "
            f"{with_option(own, 'num_processes', '1')}"
        )
    script = (
        (launch.script or (f"-m {launch.module}" if launch.module else "train.py")) if launch else "train.py"
    )
    args = shlex.join(launch.script_args) if launch and launch.script_args else ""
    if lay.generation_mode == "legacy":
        return (
            f"torchrun --nproc_per_node 1 {script} {args}".strip()
            + "  # one rank, every GPU still visible for vllm_device"
        )
    if gen:
        runner = "python" if len(train) == 1 else f"torchrun --nproc_per_node {len(train)}"
        return f"CUDA_VISIBLE_DEVICES={visible} {runner} {script} {args}".strip()
    return (
        f"torchrun --nproc_per_node {len(train)} {script} {args}".strip()
        + f"  # one rank per GPU; or CUDA_VISIBLE_DEVICES={train[0]} python {script}"
    )


@rule("LAY004", needs=("gpus",))
def num_processes_exceeds_visible(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    if ctx.plan.trainer and lay.num_processes > len(lay.visible) and lay.visible:
        yield hit(
            f"{lay.num_processes} training processes per node but only {len(lay.visible)} "
            f"GPU(s) visible ({lay.visible_source}): ranks {len(lay.visible)}+ have no GPU "
            '("CUDA error: invalid device ordinal")',
            fix=(line := with_option(ctx.plan.trainer, _procs_flag(lay.launcher), str(len(lay.visible)))),
            remedy=launch_remedy(ctx, line),
            num_processes=lay.num_processes,
            visible=lay.visible,
        )


@rule("LAY005", needs=("gpus",))
def gpu_ids_invalid(ctx: Context) -> Iterator[Hit]:
    problem = ctx.layout.problems.get("gpu_ids")
    if problem:
        n = len(ctx.facts.gpus)
        trainer = ctx.plan.trainer
        ids = valid_ids(str(trainer.options.get("gpu_ids", "")) if trainer is not None else "", n)
        remedy: list[Remedy] | None = None
        if trainer is not None and ids and "gpu_ids" in trainer.options:  # on the line: edited there
            remedy = _gpu_ids_remedies(ctx, trainer, ids, n)
        yield hit(
            problem,
            fix=f"list each GPU once, from 0–{n - 1} (`nvidia-smi -L`), in "
            "--gpu_ids / the accelerate config's gpu_ids",
            remedy=remedy,
            gpus=n,
        )


def _gpu_ids_remedies(ctx: Context, trainer: Launch, ids: str, n: int) -> list[Remedy]:
    """LAY005's candidates: each listed GPU once, as many as the node runs processes (the
    machine's other GPUs added in order), else the processes cut to the GPUs listed."""
    want = ctx.layout.num_processes
    have = ids.split(",")
    if len(have) >= want or "num_processes" not in trainer.options:
        return [launch_remedy(ctx, with_option(trainer, "gpu_ids", ids))]
    out = []
    others = [str(i) for i in range(n) if str(i) not in have]
    if len(have) + len(others) >= want:
        filled = ",".join([*have, *others][:want])
        out.append(launch_remedy(ctx, with_option(trainer, "gpu_ids", filled)))
    fewer = with_option(trainer, "gpu_ids", ids)
    fewer = with_option(replace(trainer, raw=fewer), "num_processes", str(len(have)))
    out.append(launch_remedy(ctx, fewer))
    return out


def valid_ids(text: str, n: int) -> str:
    """``text`` (a comma list of GPU indices) with each index in 0..n-1 kept once, in order;
    "" when none is left (or an entry is no plain index, e.g. a UUID: left to the user)."""
    out: list[str] = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok.isdigit():
            if tok:
                return ""
            continue
        if int(tok) < n and str(int(tok)) not in out:
            out.append(str(int(tok)))
    return ",".join(out)


def _split_gpus(ctx: Context, want: int) -> Remedy | None:
    """Where training takes every GPU of one machine, the split TRL's docs show: the server on
    the last ``want`` GPUs, the trainer on the others with as many processes (None where the
    lines cannot say it: no server or trainer line, several machines, --gpu_ids, no GPU left)."""
    server, trainer = ctx.plan.server, ctx.plan.trainer
    gpus = [g.index for g in ctx.facts.gpus]
    # a server that wants every GPU (tensor parallel over all of them) leaves training none: the
    # split then serves on one GPU at tensor parallel 1 (the memory rules judge whether it fits)
    shrink = want > 1 and len(gpus) <= want
    if shrink:
        want = 1
    if server is None or trainer is None or len(gpus) <= want:
        return None
    opts = trainer.options
    if "gpu_ids" in opts or any(
        str(opts.get(k, "1")).strip() not in ("1", "") for k in ("num_machines", "nnodes")
    ):
        return None
    launcher = ctx.layout.launcher
    serve, train = gpus[-want:], gpus[:-want]
    line = trainer.raw
    if launcher in ("accelerate", "torchrun", "deepspeed") or launcher.startswith("trl"):
        line = with_option(trainer, _procs_flag(launcher), str(len(train)))
    elif len(train) > 1:
        train = train[:1]  # one process: one GPU
    line = _with_env(line, "CUDA_VISIBLE_DEVICES", ",".join(map(str, train)))
    served = with_option(server, "tensor_parallel_size", "1") if shrink else server.raw
    srv = _with_env(served, "CUDA_VISIBLE_DEVICES", ",".join(map(str, serve)))
    return Remedy(
        launch=run_lines(ctx, trainer=line, server=srv),
        fix=f"split the GPUs (as TRL's docs do){' with the server at tensor parallel 1' if shrink else ''}: "
        f"{srv}; then {line}",
    )


#: distributions whose trainer may start vLLM in its own process by design (see IN_PROCESS_VLLM of
#: plan/script_reader): installed, and the script not read, TRL's placement of vLLM is not known
IN_PROCESS_TRAINERS = ("unsloth", "unsloth-zoo")


def in_process_unseen(ctx: Context) -> str | None:
    """Why TRL's placement of vLLM may not apply: the training script imports a trainer that can
    start vLLM in-process (Unsloth) and envdoctor did not see whether it does, or such a trainer
    is installed and the script was not read. None when the script was read and settles it."""
    script = ctx.plan.script
    if script is not None and script.vllm_in_process_unseen:
        return f"whether Unsloth starts vLLM in-process was not seen: {script.vllm_in_process_unseen}"
    if script is not None and not script.problem:
        return None
    declared = (ctx.facts.extra.get("declared") or {}).get("stack") or {}
    installed = [f"{n} {v}" for n in IN_PROCESS_TRAINERS if (v := ctx.facts.version(n))]
    installed += [
        f"{n} (declared)" for n in IN_PROCESS_TRAINERS if n in declared and not ctx.facts.version(n)
    ]
    if not installed:
        return None
    why = script.problem if script is not None else "no training script was named on a launch line"
    return (
        f"{' and '.join(installed)} is in the stack and the training script was not read ({why}): "
        "a script that loads its model with Unsloth's FastLanguageModel.from_pretrained(..., "
        "fast_inference=True) runs vLLM inside the training process, on its GPU, by design"
    )


@rule("LAY006", needs=("gpus", "vllm", "trl-layout"))
def generation_gpu_is_training_gpu(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    if lay.generation_mode not in ("legacy", "server"):
        return
    shared = sorted(set(lay.generation) & set(lay.training))
    if not shared:
        return
    ranks = [r.rank for r in lay.ranks if r.gpu in shared]
    unseen = in_process_unseen(ctx) if ctx.plan.server is None else None  # a server line: TRL's vLLM
    if unseen:
        yield hit(
            f"GPU {', '.join(map(str, shared))} is used both for generation (vLLM, "
            f"{lay.generation_mode} mode, as TRL places it) and by training rank(s) {ranks}; "
            f"but {unseen}. If it does, the shared GPU is by design (vLLM takes the "
            "gpu_memory_utilization its from_pretrained is given); if not, vLLM reserves its "
            "share up front and training runs out of memory",
            fix="give envdoctor the training script (the launch line's .py file) to decide",
            severity="info",
            gpus=shared,
            ranks=ranks,
        )
        return
    # vLLM's share of the GPU as the run sets it (legacy vllm_gpu_memory_utilization, the server
    # line's --gpu_memory_utilization): at most DELIBERATE_SHARE leaves training at least as much
    # as vLLM takes, a share on purpose (TRL's colocate mode shares every GPU at 0.3)
    util, said = set_share(ctx)
    if util is not None and util <= DELIBERATE_SHARE:
        share = f"{said} is {util:g}, which leaves training {1 - util:.0%} of the GPU"
        yield hit(
            f"GPU {', '.join(map(str, shared))} is used both for generation (vLLM, "
            f"{lay.generation_mode} mode) and by training rank(s) {ranks}, by design: {share}, "
            "as TRL's colocate mode shares a GPU; whether training fits in the rest is the memory "
            "plan's to judge (MEM rules), not a layout error",
            fix="nothing, if training fits beside vLLM's share; else give vLLM its own GPU",
            severity="info",
            gpus=shared,
            ranks=ranks,
        )
        return
    remedies: list[Remedy] = []
    if lay.generation_mode == "legacy":
        fix = (
            f"set vllm_device: auto (= cuda:{lay.world_size}) with one extra visible GPU, "
            "or lower --num_processes by one"
        )
        remedies.append(Remedy(config_set={"vllm_device": "auto"}, fix="set vllm_device: auto"))
        if ctx.plan.trainer is not None and lay.num_processes > 1:
            remedies.append(launch_remedy(ctx, _with_ranks(ctx, lay.num_processes - 1)))
    else:
        free = [g.index for g in ctx.facts.gpus if g.index not in lay.training]
        fix = (
            f"start the server on other GPUs: CUDA_VISIBLE_DEVICES={','.join(map(str, free))}"
            " trl vllm-serve …"
            if free
            else "give the server its own GPUs, or use vllm_mode: colocate"
        )
        srv, server = lay.server, ctx.plan.server
        want = len(srv.gpus) if srv and srv.gpus else 1
        if free and server is not None and len(free) >= want:
            line = _with_env(server.raw, "CUDA_VISIBLE_DEVICES", ",".join(map(str, free[:want])))
            remedies.append(launch_remedy(ctx, line, server=True))
        split = _split_gpus(ctx, want)
        if split is not None and not (free and len(free) >= want):
            remedies.append(split)
    if util is not None and util < DEFAULT_SHARE:
        # lowered from TRL's 0.9 on purpose, but above a clear share: whether training fits in
        # the rest depends on the model (held-out set 19: a 0.5B LoRA run trained 2349 steps on
        # one A100 at 0.6 with vllm_device cuda:0)
        consequence = (
            f"vLLM reserves {util:g} of it up front ({said}), leaving training {1 - util:.0%}: "
            "training runs out of memory unless the model, its gradients and optimizer state fit there"
        )
        severity = "warning"
    else:
        consequence = "vLLM reserves gpu_memory_utilization of it up front, so training runs out of memory"
        severity = "error"
    yield hit(
        f"GPU {', '.join(map(str, shared))} is used both for generation (vLLM, "
        f"{lay.generation_mode} mode) and by training rank(s) {ranks}: {consequence}",
        fix=fix,
        remedy=remedies,
        gpus=shared,
        ranks=ranks,
        severity=severity,
    )


@rule("LAY007", needs=("vllm", "trl-layout"))
def server_parallel_mismatch(ctx: Context) -> Iterator[Hit]:
    srv = ctx.layout.server
    if not srv or srv.source != "launch" or not ctx.facts.gpus:
        return
    want = srv.tensor_parallel_size * srv.data_parallel_size
    if len(srv.gpus) < want:
        yield hit(
            f"trl vllm-serve asks for tensor_parallel_size {srv.tensor_parallel_size} × "
            f"data_parallel_size {srv.data_parallel_size} = {want} GPUs but sees "
            f"{len(srv.gpus)}",
            fix="make the product equal the server's visible GPUs "
            f"(CUDA_VISIBLE_DEVICES with {want} GPUs for the server)",
            remedy=_more_server_gpus(ctx, srv.gpus, want)
            + _parallel_remedies(ctx, srv.tensor_parallel_size, srv.data_parallel_size, len(srv.gpus)),
            want=want,
            have=srv.gpus,
        )


def _more_server_gpus(ctx: Context, have: list[int], want: int) -> list[Remedy]:
    """The server line with ``want`` GPUs visible: its own and idle ones no rank trains on."""
    server = ctx.plan.server
    lay = ctx.resolved
    if server is None or lay.unresolved:
        return []
    idle = [g.index for g in ctx.facts.gpus if g.index not in have and g.index not in lay.training]
    if len(have) + len(idle) < want:
        return []
    gpus = ",".join(map(str, sorted([*have, *idle[: want - len(have)]])))
    return [launch_remedy(ctx, _with_env(server.raw, "CUDA_VISIBLE_DEVICES", gpus), server=True)]


def _parallel_remedies(ctx: Context, tp: int, dp: int, have: int) -> list[Remedy]:
    """The server line with tensor × data parallel sizes that use its ``have`` GPUs."""
    server = ctx.plan.server
    if server is None or have < 1:
        return []
    out = []
    for name, value in (
        ("tensor_parallel_size", have // dp if have % dp == 0 else 0),
        ("data_parallel_size", have // tp if have % tp == 0 else 0),
    ):
        if value >= 1:
            line = with_option(server, name, str(value))
            out.append(launch_remedy(ctx, line, server=True))
    return out


@rule("LAY008", needs=("live", "vllm", "trl-layout"))
def server_unreachable(ctx: Context) -> Iterator[Hit]:
    from envdoctor.checks.net import server_health

    lay = ctx.layout
    if lay.generation_mode != "server" or not ctx.network:
        return
    srv = lay.server
    status = server_health(ctx)
    if status is None or status.ok or not status.contacted:
        return  # not contacted: LAY013 says so (never an error from not asking)
    start = "trl vllm-serve --model <your model>"
    if srv and srv.source == "launch" and ctx.plan.server:
        start = ctx.plan.server.raw
    yield hit(
        f"no TRL vLLM server answers at {status.url}: {status.detail}",
        fix=f"start it first, on GPUs the trainer does not use: {start} (by hand: starting a "
        "server is not machine-applicable)",
        url=status.url,
        severity="warning" if srv and srv.source == "launch" else None,
    )


@rule("LAY013", needs=("live", "vllm", "trl-layout"))
def server_not_contacted(ctx: Context) -> Iterator[Hit]:
    from envdoctor.checks.net import server_address, server_health

    lay = ctx.layout
    if lay.generation_mode != "server" or not ctx.network:
        return
    status = server_health(ctx)
    if status is None or status.contacted:
        return
    key = "vllm_server_base_url" if ctx.config.get("vllm_server_base_url") else "vllm_server_host"
    if status.host and "base URL" not in status.detail:
        fix = (
            f"to check it from here: envdoctor check --allow-host {status.host} … (preflight("
            f"allow_hosts=[{status.host!r}])); or run envdoctor on that machine"
        )
    else:
        fix = (
            f"give {key} as http://HOST:PORT, or check the server by hand "
            f"(GET /health on port {server_address(ctx)[1]})"
        )
    fix += " (not machine-applicable: nothing in the inputs to change)"
    yield hit(
        f"the vLLM server at {status.url} ({key}) was not contacted: {status.detail}; "
        "envdoctor contacts loopback only unless a host is allowed",
        fix=fix,
        url=status.url,
        host=status.host,
    )


@rule("LAY009", needs=("live", "vllm", "trl-layout"))
def group_port_busy(ctx: Context) -> Iterator[Hit]:
    from envdoctor.checks.net import port_in_use

    lay = ctx.layout
    if lay.generation_mode != "server" or not ctx.network:
        return
    value = ctx.value("vllm_group_port", 51216)
    if value is COMPUTED:
        return  # the script computes the port
    port = int(value)
    if port_in_use(port):
        # a port found free now (the closure reruns without the network: the proof is this look)
        free = next((p for p in range(port + 1, min(port + 64, 65536)) if not port_in_use(p)), None)
        yield hit(
            f"port {port} (vllm_group_port, the weight-sync group) already accepts "
            "connections on this host: the trainer's weight sync will fail or hang",
            fix=f"set vllm_group_port to a free port, e.g. {free}",
            remedy=Remedy(config_set={"vllm_group_port": free}, fix=f"set vllm_group_port: {free}")
            if free
            else None,
            port=port,
        )


#: Launch-line options that name a TCP port (names with underscores, as ``Launch.options``).
_PORT_OPTIONS = ("port", "master_port", "main_process_port", "group_port")


def _bad_port(value: Any) -> bool:
    """Whether a launch-line value is a number outside 0–65535 (a variable such as ``$PORT``
    or another word is left to the launcher)."""
    text = str(value).strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdigit():
        return False
    return len(digits) > 5 or not 0 <= int(text) <= 65535


@rule("LAY014")
def port_out_of_range(ctx: Context) -> Iterator[Hit]:
    for launch in ctx.plan.launches:
        for name in _PORT_OPTIONS:
            value = launch.options.get(name)
            if value is None or not _bad_port(value):
                continue
            flag = f"--{name.replace('_', '-') if launch.is_server else name}"
            shown = str(value) if len(str(value)) <= 12 else f"{str(value)[:12]}…"
            yield hit(
                f"{flag} {shown} in the launch line `{launch.raw}` is not a TCP port (0–65535): "
                f"{launch.program[0] if launch.program else launch.launcher} fails when it binds "
                "or connects",
                fix=f"give {flag} a port from 1 to 65535 that is free on its host",
                launch=launch.raw,
                option=flag,
            )


@rule("LAY010", needs=("vllm", "trl-layout"))
def colocate_tp_not_dividing(ctx: Context) -> Iterator[Hit]:
    lay = ctx.layout
    if lay.generation_mode != "colocate":
        return
    tp = ctx.value("vllm_tensor_parallel_size", 1)  # COMPUTED (the script's): not an int
    if isinstance(tp, int) and tp > 1 and lay.world_size % tp:
        ok = [d for d in range(1, lay.world_size + 1) if lay.world_size % d == 0]
        yield hit(
            f"vllm_tensor_parallel_size {tp} does not divide the {lay.world_size} training"
            " processes: colocated vLLM groups ranks by it, and TRL refuses at init",
            fix=f"set vllm_tensor_parallel_size to one of {ok}",
            remedy=[
                Remedy(config_set={"vllm_tensor_parallel_size": d}, fix=f"set vllm_tensor_parallel_size: {d}")
                for d in sorted((d for d in ok if d < tp), reverse=True)[:2]
            ],
            tp=tp,
            world_size=lay.world_size,
        )


@rule("LAY011")
def multi_gpu_one_process(ctx: Context) -> Iterator[Hit]:
    n = ctx.layout.problems.get("multi_gpu_one_process")
    if n is not None:
        yield hit(
            f"accelerate launch --multi_gpu with --num_processes {n}: accelerate refuses "
            '("You need to use at least 2 processes to use `--multi_gpu`")',
            fix="drop --multi_gpu, or use torchrun --nproc_per_node 1 for one rank",
            remedy=[
                launch_remedy(ctx, line, f"drop --multi_gpu: {line}")
                for line in [_without_flag(ctx.plan.trainer, "--multi_gpu")]
                if line
            ],
            num_processes=n,
        )


def client_needs(ctx: Context) -> dict[str, Any] | None:
    """What TRL's client needs of its server, for the installed TRL (rules/knowledge/trl.yaml)."""
    trl = ctx.version("trl")
    rows = (ctx.kb.trl.get("vllm_server") or {}).get("client_needs") or []
    return next((r for r in rows if versions.satisfies(trl, str(r.get("trl", "")))), None)


def _trl_serve_options(ctx: Context) -> set[str]:
    """The options `trl vllm-serve` of the installed TRL accepts (they accumulate by release)."""
    trl = ctx.version("trl")
    known: set[str] = set()
    for row in (ctx.kb.trl.get("vllm_server") or {}).get("vllm_serve_args") or []:
        low = str(row.get("trl", "")).split(",")[0].lstrip(">=")
        if versions.parse(low) is not None and versions.at_least(trl, low):
            known |= set(row.get("args") or {}) | set(row.get("added") or {})
    return known


def _model(launch: Launch) -> str:
    args = launch.script_args
    if args and not args[0].startswith("-"):
        return args[0]
    return str(launch.options.get("model", "<model>"))


def _as_trl_serve(ctx: Context, launch: Launch) -> str:
    """The `vllm serve` line rewritten as `trl vllm-serve` with the options TRL knows."""
    known = _trl_serve_options(ctx) - {"model"}
    kept = [f"--{k} {shlex.quote(str(v))}" for k, v in launch.options.items() if k in known]
    env = [f"{k}={shlex.quote(v)}" for k, v in launch.env.items()]
    return " ".join([*env, "trl vllm-serve --model", shlex.quote(_model(launch)), *kept])


def _with_dev_mode(launch: Launch, env: list[str], options: dict[str, str]) -> str:
    argv = shlex.split(launch.raw)
    extra = [t for k, v in options.items() for t in (f"--{k.replace('_', '-')}", v)]
    return shell_join([*env, *argv, *extra])


def _no_weight_transfer(body: bytes) -> bool:
    """Whether vLLM's /server_info says the server runs without a weight-transfer engine."""
    try:
        info = json.loads(body)
    except ValueError:
        return False
    cfg = info.get("vllm_config") if isinstance(info, dict) else None
    return isinstance(cfg, dict) and "weight_transfer_config" in cfg and cfg["weight_transfer_config"] is None


@rule("LAY012", needs=("vllm", "trl-layout"))
def server_kind_mismatch(ctx: Context) -> Iterator[Hit]:
    from envdoctor.checks.net import get_status, policy, server_address, server_health

    lay = ctx.layout
    need = client_needs(ctx) if lay.generation_mode == "server" else None
    if need is None:
        return
    trl, launch = ctx.version("trl"), ctx.plan.server
    script = ctx.plan.script
    patched = script.client_patched if script is not None and not script.problem else None
    if patched and launch is not None and launch.launcher == "vllm-serve":
        yield hit(
            f"the server line runs vLLM's own `vllm serve`, which {release_said('trl', trl, ctx.kb)}'s "
            f"client does not talk to ({need['why']}); the training script replaces the client's "
            f"calls ({patched}), so it speaks to the server its own way: check that what it calls "
            "(an OpenAI route such as /v1/completions) is what this server serves",
            fix=(
                "nothing while the training script replaces the client's calls; without those "
                f"patches: {_as_trl_serve(ctx, launch)}"
            ),
            severity="info",
            trl=trl,
            server="vllm serve",
            client_patched=patched,
        )
        return
    if launch is not None and launch.launcher == "vllm-serve":
        if need["server"] == "trl-vllm-serve":
            yield hit(
                f"the server line runs vLLM's own `vllm serve`, but "
                f"{release_said('trl', trl, ctx.kb)}'s client needs `trl vllm-serve`: {need['why']}",
                fix=(line := _as_trl_serve(ctx, launch)),
                remedy=launch_remedy(ctx, line, server=True),
                trl=trl,
                server="vllm serve",
            )
            return
        env = {**ctx.facts.env, **launch.env}
        env_missing = {k: str(v) for k, v in (need.get("needs_env") or {}).items() if env.get(k) != str(v)}
        opts_missing = {
            k: str(v) for k, v in (need.get("needs_options") or {}).items() if k not in launch.options
        }
        advised = {
            k: str(v)
            for k, v in (need.get("advises_options") or {}).items()
            if str(launch.options.get(k)) != str(v)
        }
        if not (env_missing or opts_missing or advised):
            return
        what = [f"{k}={v} in its environment" for k, v in env_missing.items()]
        what += [f"--{k.replace('_', '-')} {v}" for k, v in {**opts_missing, **advised}.items()]
        fix = _with_dev_mode(
            launch, [f"{k}={v}" for k, v in env_missing.items()], {**opts_missing, **advised}
        )
        yield hit(
            f"the `vllm serve` line lacks {', '.join(what)}: {need['why']}",
            fix=f"{fix}  # or run it as trl vllm-serve --model {shlex.quote(_model(launch))}",
            remedy=launch_remedy(ctx, fix, server=True),
            severity=None if env_missing or opts_missing else "warning",
            trl=trl,
            server="vllm serve",
            missing=sorted({*env_missing, *opts_missing, *advised}),
        )
        return
    if patched:
        return  # the script's own client calls: TRL's routes are not what it asks the server for
    health = server_health(ctx)
    if health is None or not health.ok:
        return  # nothing to ask (LAY008 reports a server that does not answer)
    path = need["probe"]
    if versions.below(trl, "0.17.0") and need.get("probe_0_16"):
        path = need["probe_0_16"]
    status, _ = get_status(*server_address(ctx), path, policy(ctx))
    if status == 404:
        yield hit(
            f"the server at {health.url} answers its health check but has no GET {path} "
            f"(HTTP 404): it is not the server {release_said('trl', trl, ctx.kb)}'s client needs — "
            f"{need['why']}",
            fix=(
                "start it with trl vllm-serve --model <your model>"
                if need["server"] == "trl-vllm-serve"
                else "restart it with VLLM_SERVER_DEV_MODE=1 and --weight-transfer-config "
                '\'{"backend": "nccl"}\' (trl vllm-serve --model <your model> sets both)'
            ),
            trl=trl,
            probe=path,
            status=status,
        )
        return
    if need["server"] != "trl-vllm-serve" and status == 200:
        code, body = get_status(
            *server_address(ctx), "/server_info?config_format=json", policy(ctx), max_bytes=SERVER_INFO_BYTES
        )
        if code == 200 and _no_weight_transfer(body):
            yield hit(
                f"the server at {health.url} has no weight-transfer engine "
                "(/server_info: weight_transfer_config is null): TRL's client refuses at "
                "init_communicator",
                fix='restart it with --weight-transfer-config \'{"backend": "nccl"}\'',
                trl=trl,
                probe="/server_info",
            )
