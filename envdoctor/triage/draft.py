"""What a handler of a signature builds: drafts of findings, and the log facts it may look at."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envdoctor.checks.context import Context
from envdoctor.findings import Finding, Severity
from envdoctor.triage.confirm import Confirmation
from envdoctor.triage.interface import Match
from envdoctor.triage.scanner import split_prefix

FRAME = re.compile(r'File "([^"]{1,1000})", line \d{1,9}')


@dataclass
class Log:
    """What a handler may look at besides its own matches."""

    by_sig: dict[str, list[Match]]
    counts: Mapping[str, int]
    ctx: Context | None
    lines: int = 0  # the log's length in lines
    last_line: Mapping[str, int] = field(default_factory=dict)

    def hint(self, sig_id: str) -> Match | None:
        """The first match of a hint (or any) signature, if the log has one."""
        found = self.by_sig.get(sig_id)
        return found[0] if found else None


@dataclass
class Draft:
    line: int
    finding: Finding
    rank: int | None = None
    rejected: list[Match] = field(default_factory=list)


def frames(m: Match) -> list[str]:
    """The source files of the traceback frames before ``m`` (the last traceback), oldest first."""
    lines = list(m.context)
    start = max((i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line),
                default=-1)
    return [f.group(1).replace("\\", "/") for line in lines[start + 1:] if (f := FRAME.search(line))]


def context_has(m: Match, *needles: str) -> bool:
    return any(n in line for line in m.context for n in needles)


def reject(ms: Sequence[Match]) -> list[Draft]:
    """No known cause: the line is left to the first-exception answer (TRI003)."""
    return [Draft(ms[0].line_no, unknown_finding(ms), rejected=list(ms))]


def quote(m: Match, limit: int = 300) -> str:
    body = split_prefix(m.text)[0]
    return body if len(body) <= limit else body[:limit - 1] + "…"


def where(ms: Sequence[Match], count: int | None = None) -> str:
    ranks = sorted({m.rank for m in ms if m.rank is not None})
    count = max(count or 0, len(ms))
    where = f"line {ms[0].line_no}"
    if ranks:
        where += f", rank{'s' * (len(ranks) > 1)} {', '.join(map(str, ranks[:16]))}"
        where += "…" if len(ranks) > 16 else ""
    return where + (f", {count} times" if count > 1 else "")


def finding(sig_rule: str, ms: Sequence[Match], log: Log, what: str, fix: str = "",
             conf: Confirmation | None = None, **evidence: Any) -> Draft:
    from envdoctor.checks.docs import rule_docs

    first = ms[0]
    sig = first.signature
    message = f"{what} ({where(ms, log.counts.get(sig.id))}): “{quote(first)}”"
    if conf is not None and conf.summary():
        message += f" — {conf.summary()}"
    doc = rule_docs().get(sig_rule)
    ev: dict[str, Any] = {"signature": sig.id, "line": first.line_no, **first.groups,
                          **{k: v for k, v in evidence.items() if v is not None}}
    if conf is not None and conf.against and not conf.confirmed:
        ev["not_confirmed"] = conf.against
    if first.context:
        ev["context"] = list(first.context[-6:])
    fix = fix or (conf.fix if conf else "") or (doc.fix if doc else "")
    if conf is not None and conf.against and not conf.confirmed:
        fix += " (on the machine that ran it: this one does not show the cause)"
    finding = Finding(sig_rule, sig.severity, message, fix, ev)
    return Draft(first.line_no, finding, first.rank)




def unknown_finding(ms: Sequence[Match]) -> Finding:
    from envdoctor.checks.docs import rule_docs

    first = ms[0]
    message = (f"no known failure; the first exception is at {where(ms[:1])}: “{quote(first)}”")
    ev = {"signature": first.signature.id, "line": first.line_no}
    if first.context:
        ev["context"] = list(first.context[-6:])
    return Finding("TRI003", Severity.INFO, message, rule_docs()["TRI003"].fix, ev)


