"""flutter-doctor style text: one line per area, details where something is wrong."""

from __future__ import annotations

from typing import Any

from envdoctor.findings import Finding, Severity
from envdoctor.report.interface import Area, Report

MARK = {"ok": "✓", "warning": "!", "error": "✗", "skipped": "-"}
SEV_MARK = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "•"}
COLOR = {"ok": "32", "warning": "33", "error": "31", "skipped": "2", "info": "36"}


def _paint(text: str, status: str, color: bool) -> str:
    return f"\033[{COLOR[status]}m{text}\033[0m" if color else text


def _wrap(text: str, indent: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(
        text, width=width, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False
    ) or [indent]


def _finding(f: Finding, verbose: bool, color: bool) -> list[str]:
    status = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "info"}
    head = _paint(SEV_MARK[f.severity], status[f.severity], color)
    lines = _wrap(f"{head} {f.rule} {f.message}", "    ")
    if f.fix:
        lines += _wrap(f"→ fix: {f.fix}", "      ")
    if verbose and f.evidence:
        for key, value in f.evidence.items():
            if key == "traceback":
                continue
            lines += _wrap(f"{key}: {value}", "      · ")
    return lines


def _area(area: Area, verbose: bool, color: bool) -> list[str]:
    mark = _paint(f"[{MARK[area.status]}]", area.status, color)
    summary = f" ({area.summary})" if area.summary else ""
    note = f" — {area.note}" if area.note else ""
    lines = [f"{mark} {area.title}{summary}{note}"]
    for f in sorted(area.findings, key=lambda f: -f.severity.rank):
        if f.severity == Severity.INFO and not verbose and area.status == "ok":
            continue
        lines += _finding(f, verbose, color)
    if verbose and area.skipped:
        by_reason: dict[str, list[str]] = {}
        for rule_id, why in area.skipped.items():
            by_reason.setdefault(why, []).append(rule_id)
        for why, ids in by_reason.items():
            lines += _wrap(f"- {', '.join(ids)} skipped: {why}", "    ")
    return lines


def _table(rows: list[dict[str, Any]]) -> list[str]:
    cols = ["gpu", "model", "free", "role"]
    data = [[str(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(d[i]) for d in data)) for i, c in enumerate(cols)]
    fmt = "    " + "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*(c.upper() for c in cols)).rstrip()]
    out += [fmt.format(*d).rstrip() for d in data]
    return out


def _grid(table: dict[str, Any]) -> list[str]:
    """A titled table from ``report.extra["tables"]``: {"title", "columns", "rows"}."""
    cols = [str(c) for c in table.get("columns", [])]
    data = [[str(v) for v in row] for row in table.get("rows", [])]
    widths = [max([len(c), *(len(d[i]) for d in data if i < len(d))]) for i, c in enumerate(cols)]
    fmt = "    " + "  ".join(f"{{:<{w}}}" for w in widths)
    return ["", table.get("title", ""), fmt.format(*cols).rstrip()] + [
        fmt.format(*(d + [""] * len(cols))[: len(cols)]).rstrip() for d in data
    ]


def _suppressed(report: Report, verbose: bool, color: bool) -> list[str]:
    """With ``-v``: every suppressed finding and the reason it was silenced."""
    if not (verbose and report.suppressed):
        return []
    lines = ["", "Suppressed ([tool.envdoctor] ignore; not counted):"]
    for s in report.suppressed:
        lines += _finding(s.finding, False, color)
        lines += _wrap(f"suppressed by {s.suppression.label()}: {s.suppression.why}", "      ")
    return lines


def suppressed_note(report: Report) -> str:
    """`` 1 finding suppressed (LAY003: no reason given).``: the summary line's tail."""
    n = len(report.suppressed)
    if not n:
        return ""
    by_rule: dict[str, str] = {}
    for s in report.suppressed:
        by_rule.setdefault(s.finding.rule, s.suppression.why)
    shown = "; ".join(f"{rule}: {why}" for rule, why in list(by_rule.items())[:4])
    more = f"; {len(by_rule) - 4} more rules" if len(by_rule) > 4 else ""
    return f" {n} finding{'s' * (n != 1)} suppressed ({shown}{more})."


def summary_line(report: Report, verbose: bool = False, color: bool = False) -> str:
    """The last line: the counts and the first rule to explain, or "No issues found"."""
    errors, warnings = report.count(Severity.ERROR), report.count(Severity.WARNING)
    bad = sum(1 for a in report.areas if a.status in ("error", "warning"))
    note = suppressed_note(report)
    if errors or warnings:
        parts = []
        if errors:
            parts.append(f"{errors} error{'s' * (errors != 1)}")
        if warnings:
            parts.append(f"{warnings} warning{'s' * (warnings != 1)}")
        status = "error" if errors else "warning"
        worst = Severity.ERROR if errors else Severity.WARNING
        first = next(f.rule for f in report.findings if f.severity == worst)
        return (
            _paint(
                f"{MARK[status]} envdoctor found {' and '.join(parts)} in {bad} area{'s' * (bad != 1)}.",
                status,
                color,
            )
            + note
            + f" More: envdoctor explain {first}"
            + ("" if verbose else "; -v for details")
        )
    return (
        _paint("✓ No issues found.", "ok", color)
        + note
        + ("" if verbose else (" -v shows why." if note else " (-v shows every check)"))
    )


def render(report: Report, verbose: bool = False, color: bool = False, quiet: bool = False) -> str:
    """The report as text; ``quiet``: only the errors and the summary line."""
    if quiet:  # --quiet: the errors and the summary line
        lines = [
            line
            for f in report.findings
            if f.severity is Severity.ERROR
            for line in _finding(f, False, color)
        ]
        return "\n".join([*lines, summary_line(report, verbose, color)]) + "\n"
    lines = [f"envdoctor {report.version} — {report.subject}", ""]
    for area in report.areas:
        lines += _area(area, verbose, color)
    if report.layout:
        lines += ["", f"GPU layout: {report.layout_summary}" if report.layout_summary else "GPU layout:"]
        lines += _table(report.layout)
    for table in report.extra.get("tables", []):
        lines += _grid(table)
    if report.upgrade_plan:
        lines += ["", "Upgrade plan (smallest set of changes that makes the stack consistent):"]
        lines += [f"    {cmd}" for cmd in report.upgrade_plan]
    lines += _suppressed(report, verbose, color)
    lines += ["", summary_line(report, verbose, color)]
    return "\n".join(lines) + "\n"
