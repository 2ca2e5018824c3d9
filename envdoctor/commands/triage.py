"""``envdoctor triage LOGFILE|-``: which known failure a crashed run's log shows, and the fix."""

from __future__ import annotations

import sys
import time

import click

from envdoctor.commands.options import emit, format_option, output_option, use_color, verbose_option


@click.command()
@click.argument("logfile", type=str)
@click.option("--facts", "facts_file", type=str, metavar="FILE",
              help="Judge against a snapshot instead of this machine.")
@click.option("--config", type=str, metavar="FILE", help="The run's GRPO config.")
@click.option("--launch", multiple=True, metavar="CMD", help="The run's launch command line.")
@format_option
@output_option
@verbose_option
def triage(logfile, facts_file, config, launch, fmt, output, verbose) -> None:
    """Read a failed run's log (or - for stdin) and name the failure, why, and the fix.

        envdoctor triage train.log --config grpo.yaml --launch "accelerate launch …"
    """
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import Outcome
    from envdoctor.doctor import build_report
    from envdoctor.errors import InputError
    from envdoctor.facts.collect import collect_facts
    from envdoctor.facts.snapshot import load
    from envdoctor.plan.build import build_plan
    from envdoctor.report import render
    from envdoctor.report.interface import Area
    from envdoctor.triage.diagnose import diagnose
    from envdoctor.triage.scanner import scan

    facts = load(facts_file) if facts_file else collect_facts()
    plan = build_plan(config=config, launch="\n".join(launch) or None, live=facts.live)
    ctx = Context(facts=facts, plan=plan, network=False)
    start = time.perf_counter()
    try:
        if logfile == "-":
            result = scan(sys.stdin.buffer)
        else:
            with open(logfile, "rb") as fh:
                result = scan(fh)
    except OSError as exc:
        raise InputError(logfile, f"cannot read: {exc.strerror or exc}") from None
    seconds = time.perf_counter() - start
    found = diagnose(result, ctx)
    mb = result.bytes_read / 1e6
    area = Area(key="triage", title="Triage", ran=["triage"], findings=found,
                summary=f"{logfile}: {result.lines} lines, {mb:.1f} MB in {seconds:.2f} s; "
                        f"{len(found) or 'no'} known failure{'s' * (len(found) != 1)}"
                        f"; judged against {'snapshot ' + facts_file if facts_file else 'this machine'}")
    report = build_report(ctx, Outcome(), extra_areas=[area],
                          subject=f"triage of {'standard input' if logfile == '-' else logfile}")
    report.areas = [area]
    report.upgrade_plan = []
    emit(render(report, fmt, verbose=verbose, color=fmt == "text" and not output and use_color()),
         output)
    sys.exit(report.exit_code())
