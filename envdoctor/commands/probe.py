"""``envdoctor probe`` (and ``check --probe``): a tiny real GRPO step on the planned GPUs."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

from envdoctor.commands.options import (
    LaunchCommand,
    accelerate_config_option,
    config_option,
    launch_option,
)
from envdoctor.report.interface import Area

if TYPE_CHECKING:
    from envdoctor.checks.context import Context


def _progress(enabled: bool):
    """On a terminal: the live phase, and each finished phase on its own line with its time."""
    if not enabled:
        return None
    state: dict[str, Any] = {"phase": "", "since": time.monotonic()}

    def show(phase: str) -> None:
        now = time.monotonic()
        if state["phase"]:
            click.echo(f"\r\033[Kprobe: {state['phase']} ({now - state['since']:.1f} s)", err=True)
        state["phase"], state["since"] = phase, now
        click.echo(f"\r\033[Kprobe: {phase}…", nl=False, err=True)

    return show


def probe_area(ctx: Context, timeout: float = 180.0, show_progress: bool = False) -> Area:
    """Run the probe for the plan in ``ctx`` and return its report area (on a terminal, with
    its phases shown as they pass)."""
    from envdoctor.probe.area import probe_area as run_area

    tty = show_progress and sys.stderr.isatty()
    area = run_area(ctx, timeout=timeout, on_phase=_progress(tty))
    if tty:
        click.echo("\r\033[K", nl=False, err=True)
    return area


@click.command(cls=LaunchCommand)
@config_option
@accelerate_config_option
@launch_option
@click.option(
    "--timeout",
    type=float,
    default=180.0,
    show_default=True,
    help="Wall-clock limit of the probe (s); the whole process group is ended then.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit"]), default="text")
@click.option("-v", "--verbose", is_flag=True)
@click.argument("launch_argv", nargs=-1, type=click.UNPROCESSED)
def probe(config, accelerate_config, launch, timeout, fmt, verbose, launch_argv) -> None:
    """Run only the probe: one GRPO step with TRL's GRPOTrainer on a model of your shape.

    envdoctor probe -- accelerate launch --num_processes 3 train.py
    """
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import Outcome
    from envdoctor.commands.options import emit, use_color
    from envdoctor.doctor import build_report
    from envdoctor.facts.collect import collect_facts
    from envdoctor.plan.build import build_plan
    from envdoctor.report import render
    from envdoctor.settings import valid_timeout

    timeout = valid_timeout(timeout, "--timeout")
    facts = collect_facts()
    plan = build_plan(
        config=config,
        accelerate_config=accelerate_config,
        launch="\n".join(launch) or None,
        launch_argv=launch_argv,
        live=True,
    )
    ctx = Context(facts=facts, plan=plan)
    area = probe_area(ctx, timeout=timeout, show_progress=fmt == "text")
    report = build_report(ctx, Outcome(), extra_areas=[area])
    report.areas = [a for a in report.areas if a.key in ("gpus", "layout", "probe")]
    for a in report.areas:
        if a.key != "probe":
            a.note = ""
    emit(render(report, fmt, verbose=verbose, color=fmt == "text" and use_color()), None)
    sys.exit(report.exit_code())
