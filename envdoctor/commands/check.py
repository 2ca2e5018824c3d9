"""``envdoctor check``: run the rules (and optionally the probe) and print the report."""

from __future__ import annotations

import sys

import click

from envdoctor.commands.options import (
    LaunchCommand,
    accelerate_config_option,
    assume_option,
    config_option,
    emit,
    facts_and_plan,
    facts_option,
    format_option,
    ignore_option,
    launch_option,
    no_color_option,
    output_option,
    quiet_option,
    select_option,
    split_list,
    strict_option,
    use_color,
    verbose_option,
)


@click.command(cls=LaunchCommand)
@config_option
@accelerate_config_option
@facts_option("Check a snapshot from `envdoctor collect` instead of this machine.")
@launch_option
@select_option
@ignore_option
@format_option
@output_option
@verbose_option
@quiet_option
@no_color_option
@strict_option
@assume_option
@click.option(
    "--no-network",
    is_flag=True,
    help="Contact nothing: skip the vLLM server health check and the port check.",
)
@click.option(
    "--allow-host",
    "allow_host",
    multiple=True,
    metavar="HOST",
    help="Also contact the vLLM server on HOST (a name or an IP; repeatable). Without "
    "it only loopback is contacted (docs/reliability.md#network).",
)
@click.option(
    "--upgrade-plan", is_flag=True, help="Print only the pip command that makes the stack consistent."
)
@click.option(
    "--probe",
    is_flag=True,
    help="Also run a tiny real GRPO step on the planned GPUs (needs the probe extra).",
)
@click.option(
    "--probe-timeout",
    type=float,
    default=None,
    help="Wall-clock limit of the probe in seconds (default 180).",
)
@click.option(
    "--distributed",
    is_flag=True,
    help="Check a whole torchrun / accelerate launch job: facts of every node, their "
    "differences, an all-reduce (docs/cluster.md).",
)
@click.argument("launch_argv", nargs=-1, type=click.UNPROCESSED)
def check(
    config,
    accelerate_config,
    facts_file,
    launch,
    select,
    ignore,
    fmt,
    output,
    verbose,
    quiet,
    strict,
    assume,
    no_network,
    allow_host,
    upgrade_plan,
    probe,
    probe_timeout,
    distributed,
    launch_argv,
) -> None:
    """Check this machine (or a snapshot) for a GRPO run.

    Give the launch command after `--` (or after the options, when it starts with a word):

    \b
        envdoctor check --config grpo.yaml -- accelerate launch --num_processes 3 train.py
    """
    from envdoctor.doctor import check as run_check
    from envdoctor.report import render
    from envdoctor.settings import load_settings

    settings = load_settings()
    select_ids = split_list(select) or settings.get("select") or None
    ignore_ids = split_list(ignore) or None  # --ignore: not run
    suppress = settings.get("ignore") or None  # [tool.envdoctor] ignore: run, listed as suppressed
    strict = settings.get("strict", False) if strict is None else strict
    allow: tuple[str, ...] = ()
    if allow_host:
        from envdoctor.net_policy import allowed_hosts

        allow = allowed_hosts(allow_host, "--allow-host")
    if distributed:
        sys.exit(
            _distributed(
                config,
                accelerate_config,
                facts_file,
                probe,
                upgrade_plan,
                launch_text(launch, launch_argv),
                select_ids,
                # the cluster report lists no suppressions: a whole-rule entry is not run there
                [*(ignore_ids or []), *(s.rule for s in suppress or [] if not s.where)] or None,
                fmt,
                output,
                verbose,
                bool(strict),
                no_network,
                assume,
                allow,
                probe_timeout=(valid_probe_timeout(probe_timeout, settings) if probe else None),
            )
        )
    facts, plan = facts_and_plan(facts_file, assume, config, accelerate_config, launch, launch_argv)
    ctx, report = run_check(
        facts,
        plan,
        select=select_ids,
        ignore=ignore_ids,
        network=not no_network,
        allow_hosts=allow,
        suppress=suppress,
    )
    if probe:
        from envdoctor.errors import InputError

        if not facts.live:
            raise InputError(
                "--probe", "the probe runs on this machine; it cannot check a snapshot (drop --facts)"
            )
        from envdoctor.commands.probe import probe_area

        timeout = valid_probe_timeout(probe_timeout, settings)
        from envdoctor.doctor import with_probe

        with_probe(report, probe_area(ctx, timeout=timeout, show_progress=fmt == "text"))
    if upgrade_plan:
        emit(
            "\n".join(report.upgrade_plan) + "\n"
            if report.upgrade_plan
            else "# the installed stack is consistent: nothing to change\n",
            output,
        )
        sys.exit(0)
    emit(
        render(report, fmt, verbose=verbose, color=fmt == "text" and not output and use_color(), quiet=quiet),
        output,
    )
    if output and output != "-" and fmt != "text":  # as the hook: the terminal / CI log still shows it
        emit(render(report, "text", verbose=verbose, color=use_color(), quiet=quiet), None)
    sys.exit(report.exit_code(strict=bool(strict)))


def _distributed(
    config,
    accelerate_config,
    facts_file,
    probe,
    upgrade_plan,
    launch,
    select,
    ignore,
    fmt,
    output,
    verbose,
    strict,
    no_network,
    assume,
    allow_hosts: tuple[str, ...] = (),
    probe_timeout: float | None = None,
) -> int:
    """``--distributed``: the cluster check on this rank (torch is imported only here)."""
    from envdoctor.errors import InputError

    clash = [
        flag
        for flag, on in (
            ("--facts", facts_file),
            ("--upgrade-plan", upgrade_plan),
            ("--assume", assume),
        )
        if on
    ]
    if clash:
        raise InputError("--distributed", f"cannot be combined with {', '.join(clash)}")
    from envdoctor.cluster import run_distributed

    return run_distributed(
        config=config,
        accelerate_config=accelerate_config,
        launch=launch,
        select=select,
        ignore=ignore,
        fmt=fmt,
        output=output,
        verbose=verbose,
        strict=strict,
        network=not no_network,
        allow_hosts=allow_hosts,
        color=fmt == "text" and not output and use_color(),
        probe=bool(probe),
        probe_timeout=probe_timeout or 180.0,
    )


def valid_probe_timeout(probe_timeout: float | None, settings: dict) -> float:
    """--probe-timeout, else the settings' probe-timeout, else 180 s."""
    from envdoctor.settings import valid_timeout

    if probe_timeout is not None:
        return float(valid_timeout(probe_timeout, "--probe-timeout"))
    return float(settings.get("probe-timeout") or 180.0)


def launch_text(launch: tuple[str, ...], argv: tuple[str, ...] = ()) -> str | None:
    """``--launch`` lines and the command after ``--`` as one launch text, for the cluster
    check, which hands it to every rank as text (``check`` itself passes argv as argv)."""
    import shlex

    lines = list(launch)
    if argv:
        lines.append(" ".join(t if t in (";", "&&", "&") else shlex.quote(t) for t in argv))
    return "\n".join(lines) or None
