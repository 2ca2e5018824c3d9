"""``envdoctor triage LOGFILE|-``: which known failure a crashed run's log shows, why, and the fix."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, BinaryIO

import click

from envdoctor.commands.options import (
    emit,
    format_option,
    no_color_option,
    output_option,
    quiet_option,
    use_color,
    verbose_option,
)


def _open(logfile: str) -> BinaryIO:
    from envdoctor.errors import InputError, require_regular_file

    if logfile == "-":
        return sys.stdin.buffer
    require_regular_file(logfile, logfile)
    try:
        return open(logfile, "rb")  # noqa: SIM115 (closed by the caller)
    except OSError as exc:
        raise InputError(logfile, f"cannot read: {exc.strerror or exc}") from None


def _big_plain(logfile: str, stream: BinaryIO) -> bool:
    """Whether the log is a plain-text file big enough for grep or the parallel scan."""
    from envdoctor.triage.decode import SNIFF, is_plain
    from envdoctor.triage.parallel import PARALLEL_MIN
    from envdoctor.triage.prefilter import PREFILTER_MIN

    if stream is sys.stdin.buffer or os.path.getsize(logfile) < min(PARALLEL_MIN, PREFILTER_MIN):
        return False
    head = stream.read(SNIFF)
    stream.seek(0)
    return is_plain(head)


def _scan(logfile: str, stream: BinaryIO, grepped: Any, scan: Any, chunks: Any) -> Any:
    """What grep found (started before the facts were collected), else a big plain-text file in
    parallel (one range of lines per CPU), else anything streamed."""
    from envdoctor.triage.parallel import scan_file

    if grepped is not None:
        found = grepped.result()
        return found if found is not None else scan_file(logfile, grep=False)
    return scan(chunks(stream))


def _versions(found_versions: dict, facts_file: str | None) -> str:
    """Where the versions that advice names come from."""
    from envdoctor.triage.logversions import describe

    if found_versions:
        return f"versions: from the log ({describe(found_versions)})"
    if facts_file:
        return f"versions: from snapshot {facts_file}, the log shows none"
    return "versions: from this machine, the log shows none"


def _summary(name: str, result: Any, found: list, facts_file: str | None, found_versions: dict) -> str:
    from envdoctor.findings import Severity

    errors = sum(f.severity == Severity.ERROR for f in found)
    warnings = sum(f.severity == Severity.WARNING and f.rule != "TRI003" for f in found)
    what = f"{errors} known failure{'s' * (errors != 1)}" if errors else "no known failure recognised"
    if warnings:
        what += f", {warnings} warning{'s' * (warnings != 1)}"
    unknown = next((f for f in found if f.rule == "TRI003"), None)
    if unknown is not None:
        what += f"; a crash not recognised (first exception at line {unknown.evidence.get('line')}: TRI003)"
    judged = (
        f"judged against snapshot {facts_file}"
        if facts_file
        else "judged against this machine's live facts; --facts FILE for the node that ran it"
    )
    lines = f"{result.lines:,} line{'s' * (result.lines != 1)}"
    return (
        f"{name}: {lines}, {result.bytes_read / 1e6:.1f} MB; {what}; {judged}; "
        f"{_versions(found_versions, facts_file)}"
    )


@click.command()
@click.argument("logfile", type=str)
@click.option(
    "--facts",
    "facts_file",
    type=str,
    metavar="FILE",
    help="Judge against a snapshot (`envdoctor collect`) instead of this machine.",
)
@click.option("--config", type=str, metavar="FILE", help="The run's GRPO config (YAML/JSON).")
@click.option(
    "--launch",
    multiple=True,
    metavar="CMD",
    help="The run's launch command line (repeatable: the trainer, `trl vllm-serve`).",
)
@format_option
@output_option
@verbose_option
@quiet_option
@no_color_option
def triage(logfile, facts_file, config, launch, fmt, output, verbose, quiet) -> None:
    """Read a failed run's LOGFILE (- for stdin): the known failure, why here, and the fix.

        envdoctor triage train.log --config grpo.yaml --launch "accelerate launch … train.py"

    Exit status: 1 when a known failure is found, 0 when none (an unrecognised crash is a
    warning, "!", with an issue draft), 2 when the input is unreadable or empty.
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
    from envdoctor.triage.decode import LogUnreadable, chunks
    from envdoctor.triage.diagnose import diagnose_scan, scan_versions
    from envdoctor.triage.parallel import grepper
    from envdoctor.triage.scanner import scan
    from envdoctor.triage.signatures import signatures

    stream = _open(logfile)  # before collecting facts: a missing file fails at once
    with contextlib.ExitStack() as stack:
        if stream is not sys.stdin.buffer:
            stack.callback(stream.close)
        # a big plain log: grep reads it while the facts are collected (it ends with this block)
        grepped = stack.enter_context(grepper(logfile)) if _big_plain(logfile, stream) else None
        facts = load(facts_file) if facts_file else collect_facts()
        plan = build_plan(config=config, launch="\n".join(launch) or None, live=facts.live)
        try:
            result = _scan(logfile, stream, grepped, scan, chunks)
        except OSError as exc:
            raise InputError(logfile, f"cannot read: {exc.strerror or exc}") from None
        except LogUnreadable as exc:
            raise InputError(logfile, f"could not be read: {exc}") from None
    name = "standard input" if logfile == "-" else logfile
    if result.bytes_read <= len(result.head) and not result.head.strip():
        raise InputError(name, "is empty (nothing but blank lines): there is nothing to triage")
    ctx = Context(facts=facts, plan=plan, network=False)
    found_versions = scan_versions(result)
    found = diagnose_scan(result, ctx, found_versions)
    if logfile != "-":  # a finding that names a line of the log is located there (SARIF region)
        from envdoctor.doctor import repo_relative

        for f in found:
            if isinstance(f.evidence.get("line"), int) and "file" not in f.evidence:
                f.evidence["file"] = repo_relative(logfile)
    ran = sorted({s.rule for s in signatures()} | {f.rule for f in found})  # JUnit: one case each
    area = Area(
        key="triage",
        title="Triage",
        ran=ran,
        findings=found,
        summary=_summary(name, result, found, facts_file, found_versions),
    )
    report = build_report(ctx, Outcome(), extra_areas=[area], subject=f"triage of {name}")
    report.areas = [area]  # the static checks' areas did not run: `envdoctor check` runs them
    if logfile != "-":
        from envdoctor.doctor import repo_relative

        report.artifact = repo_relative(logfile)  # the file the findings come from
    report.upgrade_plan = []
    text = render(
        report, fmt, verbose=verbose, color=fmt == "text" and not output and use_color(), quiet=quiet
    )
    known = tuple(getattr(report, "secrets", ()))  # the plan's: the draft is masked as the report is
    if fmt == "text":
        text = _unknown_text(text, found, verbose, draft=not quiet, known=known)
    emit(text, output)
    if output and output != "-" and fmt != "text":  # as check and the hook: the terminal shows it
        shown = render(report, "text", verbose=verbose, color=use_color(), quiet=quiet)
        emit(_unknown_text(shown, found, verbose, draft=not quiet, known=known), None)
    sys.exit(report.exit_code())


def _unknown_text(
    text: str, found: list, verbose: bool = False, draft: bool = True, known: tuple[str, ...] = ()
) -> str:
    """A log with no known failure says so in place of the static check's summary line: a crash
    that no signature recognises (TRI003, "!") with its issue draft, or no exception at all."""
    from envdoctor.findings import Severity

    if any(f.severity is Severity.ERROR for f in found):
        return text
    unknown = next((f for f in found if f.rule == "TRI003"), None)
    lines = text.rstrip("\n").split("\n")
    if unknown is None:
        if not any(f.severity.rank > 0 for f in found):
            lines[-1] = "• no known failure recognised, and no exception in the log"
        return "\n".join(lines) + "\n"
    if not any(f.severity is Severity.WARNING and f.rule != "TRI003" for f in found):
        lines[-1] = (
            f"! a crash was found but not recognised: TRI003 names its first exception (line "
            f"{unknown.evidence.get('line')}); no known failure, exit 0"
        )
    issue = unknown.evidence.get("issue_draft") if draft else None
    if issue:
        from envdoctor.redact import redact

        lines += ["", "An issue draft to paste (check it first):", "", redact(str(issue), known)]
    return "\n".join(lines) + "\n"
