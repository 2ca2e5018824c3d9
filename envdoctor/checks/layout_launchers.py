"""Rules on the job launcher a repository declares around a bare ``python`` trainer line
(envdoctor.plan.launchers): the layout it gives, or why its process count is not known."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.plan.interface import Launch


def _script(ctx: Context) -> str:
    trainer = ctx.plan.trainer
    return (trainer.script or trainer.module or "the script") if trainer is not None else "the script"


@rule("LAY017", needs=("plan",))
def job_launcher_processes_unknown(ctx: Context) -> Iterator[Hit]:
    job = ctx.plan.job
    if job is None or not (job.unknown or ctx.resolved.unresolved):
        return
    why = job.unknown or ctx.resolved.unresolved
    yield hit(
        f"{job.kind} ({job.source}) runs `{_script(ctx)}`, and how many processes it starts here is "
        f"not known: {why}. The layout rules that need the process count were not run.",
        kind=job.kind,
        source=job.source,
        why=why,
    )


@rule("LAY018", needs=("plan",))
def job_launcher_layout(ctx: Context) -> Iterator[Hit]:
    job = ctx.plan.job
    if job is None or job.unknown or job.per_node is None or ctx.resolved.unresolved:
        return
    how = "one torch.distributed job" if job.distributed else "one process that sees every GPU of its node"
    yield hit(
        f"{job.kind} ({job.source}) runs `{_script(ctx)}` with {job.describe()}: the layout follows "
        f"it ({how}), not the bare python line alone.",
        kind=job.kind,
        source=job.source,
        per_node=job.per_node,
        nodes=job.nodes or 1,
        command=(job.command or "")[:300],
    )


@rule("LAY019", needs=("plan",))
def launch_file_not_where_named(ctx: Context) -> Iterator[Hit]:
    from envdoctor.plan.deepspeed_json import read_deepspeed_json
    from envdoctor.plan.launch_files import NOT_JUDGED

    for f in ctx.plan.launch_files:
        named = f"`{f.option} {f.written}` ({f.what} the launch line names)"
        if f.known:
            yield hit(
                f"{named} is not in this repository; read as {f.how} (the file whose path it ends "
                "with), as envdoctor knows it: a file of that name the run finds elsewhere may differ.",
                fix="run envdoctor where the launch line runs, or pass the file with --accelerate-config",
                severity="info",
                what=f.what,
                written=f.written,
                known=f.known,
            )
        elif f.read:
            yield hit(
                f"{named} is not there from here; read as {f.read} ({f.how}).",
                fix="run envdoctor from the folder the launch line is run from",
                severity="info",
                what=f.what,
                written=f.written,
                read=f.read,
            )
        elif f.missing is not None and _stops(f.what, f.written):
            yield _missing(f.what, f.option, f.written, f.missing)
        else:
            yield hit(
                f"{named} is not here, nor from the repository's root or its parent folder: not read, "
                f"so {f.not_judged}.",
                fix=f"run envdoctor where the launch line runs, or pass the {f.what} to envdoctor",
                severity="info",
                what=f.what,
                written=f.written,
            )
    ds = read_deepspeed_json(ctx.plan)
    # a JSON file's path (ms-swift's `--deepspeed zero2` names one of its own configs)
    if (
        ds is not None
        and ds.problem
        and ds.problem.endswith(" is not here")
        and str(ds.path).endswith(".json")
    ):
        from envdoctor.plan.launch_files import missing_in_repository, script_here

        trainer = ctx.plan.trainer
        others = "\n".join(lx.raw for lx in ctx.plan.launches if lx is not trainer)
        same = (
            missing_in_repository(str(ds.path), others)
            if trainer is not None
            and ds.where.endswith("(command line)")
            and script_here(trainer.script, trainer.module)
            else None
        )
        if same is not None:
            yield _missing("DeepSpeed config", "--deepspeed", str(ds.path), same)
            return
        yield hit(
            f"`{ds.path}` ({ds.where}) is not here, nor from the repository's root or its parent folder: "
            f"not read, so {NOT_JUDGED['DeepSpeed config']}.",
            fix="run envdoctor where the launch line runs",
            severity="info",
            what="DeepSpeed config",
            written=ds.path,
        )


#: what the run does with each kind of file that is not there, read at the packages' tags
_STOPS = {
    "accelerate config": (
        "`accelerate launch` stops before any process starts: load_config_from_file raises "
        'FileNotFoundError ("The passed configuration file `{written}` does not exist")'
    ),
    "GRPO config": (
        "the script stops at startup: TRL's parser opens the file given to --config "
        "(FileNotFoundError) before any dataclass is built"
    ),
    "DeepSpeed config": (
        'TrainingArguments(deepspeed=…) raises ValueError before the model loads ("Expected a string '
        'path to an existing deepspeed config, or a dictionary, or a base64 encoded string")'
    ),
}


def _stops(what: str, written: str) -> bool:
    """Whether the run opens the missing file for certain: an accelerate or DeepSpeed config, a
    ``--config`` that names a YAML / JSON file (not a name the script looks up)."""
    return what != "GRPO config" or written.lower().endswith((".yaml", ".yml", ".json"))


def _missing(what: str, option: str, written: str, same: tuple[str, ...]) -> Hit:
    """LAY019's error: a relative path that no file of the repository ends with."""
    stops = _STOPS.get(what, "the run stops when it opens it").format(written=written)
    if len(same) == 1:
        fix = (
            f"point {option} at the repository's {same[0]} (its only file of that name), or commit {written}"
        )
    elif same:
        named = ", ".join(same[:4])
        fix = f"point {option} at the repository's file meant (of that name: {named}), or commit {written}"
    else:
        fix = f"commit {written}, or point {option} at the {what} the run should use"
    return hit(
        f"`{option} {written}` ({what} the launch line names) is in no folder of this repository (no file "
        f"ends with that path) and no other line of the run writes it: {stops}.",
        fix=fix,
        severity="error",
        what=what,
        written=written,
        same_name=list(same[:8]),
    )


@rule("LAY020", needs=("plan",))
def launch_read_through_script(ctx: Context) -> Iterator[Hit]:
    trainer = ctx.plan.trainer
    if trainer is None or trainer.source is None or trainer.unresolved:
        return  # not followed, or not resolved: the layout area says why
    from envdoctor.plan.shell_words import join

    command = (
        join(
            [
                *trainer.program,
                *([trainer.script] if trainer.script and trainer.script not in trainer.program else []),
                *trainer.script_args,
            ]
        )
        if trainer.launcher != "unknown"
        else trainer.raw
    )
    servers = [lx.source for lx in ctx.plan.launches if lx.is_server and lx.source]
    also = f", with the server's line from {', '.join(servers)}" if servers else ""
    unknown = list(trainer.unknown)
    part = f"; resolved in part: {'; '.join(unknown[:4])}" if unknown else ""
    yield hit(
        f"`{trainer.via or trainer.raw}` runs `{command[:200]}` ({trainer.source}), read as the trainer's "
        f"line{also}{part}.",
        via=trainer.via,
        source=trainer.source,
        command=command[:300],
        servers=servers,
        unknown=unknown[:8],
    )


#: what each launcher's argparse does with a one-dash option of several letters (its parser run
#: offline: accelerate 1.15.0's launch_command_parser, torch 2.13's torch.distributed.run)
_REFUSES = {
    "accelerate": (
        "accelerate's parser refuses it and exits 2 before any process starts (\"unrecognized "
        'arguments: -num_processes"; a word that starts with -m or -q: "argument -m/--module: ignored '
        "explicit argument\"), or, after -t (--tee), silently takes the rest as tee's value and the "
        "next word as the script"
    ),
    "torchrun": (
        "torchrun's parser refuses it and exits 2 before any process starts (\"unrecognized arguments: "
        '-nproc_per_node"; a word that starts with -m: "argument -m/--module: ignored explicit argument")'
    ),
}


def _launcher_said(launch: Launch) -> str:
    """The launcher as the line names it (torch's launch module is read as torchrun)."""
    for module in ("torch.distributed.launch", "torch.distributed.run"):
        if launch.launcher == "torchrun" and f"-m {module}" in launch.raw:
            return f"python -m {module}"
    return launch.launcher


@rule("LAY024", needs=("plan",))
def launcher_option_single_dash(ctx: Context) -> Iterator[Hit]:
    """A launcher option written with one dash (``accelerate launch -num_processes=7``): the
    launcher's argparse reads no such option."""
    import shlex

    from envdoctor.checks.layout import launch_remedy
    from envdoctor.plan.shell_words import join

    for launch in ctx.plan.launches:
        if not launch.single_dash or launch.is_server:
            continue
        try:
            argv = shlex.split(launch.raw)
        except ValueError:
            continue
        left = list(launch.single_dash)
        fixed = []
        for tok in argv:
            if left and tok == left[0]:
                fixed.append("-" + tok)
                left.pop(0)
            else:
                fixed.append(tok)
        line = join(fixed) if not left else None
        said = ", ".join(f"`{t}`" for t in launch.single_dash)
        trainer = launch is ctx.plan.trainer
        yield hit(
            f"{said} on the {_launcher_said(launch)} line `{launch.raw[:160]}`: a long option takes two "
            "dashes; "
            f"{_REFUSES[launch.launcher]}.",
            fix=f"{line}  # two dashes on the launcher's options"
            if line
            else "write the launcher's options with two dashes",
            severity="error",
            remedy=launch_remedy(ctx, line, fix=line) if line and trainer else None,
            launcher=launch.launcher,
            options=list(launch.single_dash),
        )
