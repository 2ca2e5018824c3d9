"""What a handler of a signature builds: drafts of findings, and the log facts it may look at."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envdoctor.checks.context import Context
from envdoctor.findings import Finding, Severity
from envdoctor.redact import cut
from envdoctor.triage.confirm import Confirmation
from envdoctor.triage.interface import Match
from envdoctor.triage.logversions import LogVersion, describe
from envdoctor.triage.scanner import split_prefix
from envdoctor.triage.traceback_model import Frame

FRAME = re.compile(r'File "([^"]{1,1000})", line \d{1,9}')
FRAME_FULL = re.compile(
    r'File "(?P<path>[^"]{1,1000})", line (?P<line>\d{1,9})'
    r"(?:, in (?P<func>[\w<>.]{1,200}))?"
)
_PACKAGES = re.compile(r"/(?:site|dist)-packages/(?P<lib>[A-Za-z_][\w]{0,100})")
_WARNING = re.compile(r"\bWARN(?:ING)?\b|\[W\d{4} |UserWarning|FutureWarning")
_CONNECTION = (
    "RemoteDisconnected",
    "Connection aborted",
    "ConnectionResetError",
    "Connection reset by peer",
    "Connection refused",
)


@dataclass
class Log:
    """What a handler may look at besides its own matches."""

    by_sig: dict[str, list[Match]]
    counts: Mapping[str, int]
    ctx: Context | None
    lines: int = 0  # the log's length in lines
    last_line: Mapping[str, int] = field(default_factory=dict)
    versions: Mapping[str, LogVersion] = field(default_factory=dict)  # what the log shows
    head: bytes = b""  # the log's first MiB (``ScanResult.head``): the lines after a failing line

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
    start = max(
        (i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line), default=-1
    )
    return [f.group(1).replace("\\", "/") for line in lines[start + 1 :] if (f := FRAME.search(line))]


def context_has(m: Match, *needles: str) -> bool:
    return any(n in line for line in m.context for n in needles)


def reject(ms: Sequence[Match]) -> list[Draft]:
    """No known cause: the line is left to the first-exception answer (TRI003)."""
    return [Draft(ms[0].line_no, unknown_finding(ms), rejected=list(ms))]


def quote(m: Match, limit: int = 300) -> str:
    return cut(split_prefix(m.text)[0], limit)  # redacted before it is cut: no part of a secret


def where(ms: Sequence[Match], count: int | None = None) -> str:
    ranks = sorted({m.rank for m in ms if m.rank is not None})
    count = max(count or 0, len(ms))
    where = f"line {ms[0].line_no}"
    if ranks:
        where += f", rank{'s' * (len(ranks) > 1)} {', '.join(map(str, ranks[:16]))}"
        where += "…" if len(ranks) > 16 else ""
    return where + (f", {count} times" if count > 1 else "")


def finding(
    sig_rule: str,
    ms: Sequence[Match],
    log: Log,
    what: str,
    fix: str = "",
    conf: Confirmation | None = None,
    **evidence: Any,
) -> Draft:
    from envdoctor.rule_docs import rule_docs

    first = ms[0]
    sig = first.signature
    message = f"{what} ({where(ms, log.counts.get(sig.id))}): “{quote(first)}”"
    if conf is not None and conf.summary():
        message += f" — {conf.summary()}"
    doc = rule_docs().get(sig_rule)
    ev: dict[str, Any] = {
        "signature": sig.id,
        "line": first.line_no,
        **first.groups,
        **{k: v for k, v in evidence.items() if v is not None},
    }
    if conf is not None and conf.against and not conf.confirmed:
        ev["not_confirmed"] = conf.against
    if first.context:
        ev["context"] = list(first.context[-6:])
    fix = fix or (conf.fix if conf else "") or (doc.fix if doc else "")
    if conf is not None and conf.against and not conf.confirmed:
        fix += " (on the machine that ran it: this one does not show the cause)"
    finding = Finding(sig_rule, sig.severity, message, fix, ev)
    return Draft(first.line_no, finding, first.rank)


def at_severity(d: Draft, severity: Severity) -> Draft:
    """The draft with its finding at ``severity`` (a rule's certainty decided after the finding was
    built): the one place a draft's severity changes."""
    f = d.finding
    d.finding = Finding(f.rule, severity, f.message, f.fix, f.evidence)
    return d


def _short(f: Frame) -> str:
    """``vllm/v1/engine/core.py:412 in run``: a package's frame by its package's folder and path."""
    path = f.path.replace("\\", "/")
    if f.package is not None:
        top = path[: len(path) - len(f.module_path)].rstrip("/").rsplit("/", 1)[-1]
        where = f"{top}/{f.module_path}" if top else f.module_path
    else:
        where = path.rsplit("/", 1)[-1]
    return f"{where}:{f.line}" + (f" in {f.function}" if f.function else "")


def _handed_on(m: Match) -> str:
    """Where an exception an attribute hook raised for its caller was raised: the caller
    (``raisethrough.hand_on``); empty where the hooks raised on their own."""
    from envdoctor.triage.raisethrough import through_text
    from envdoctor.triage.traceback import failure

    if "__" not in "".join(m.context[-12:]):  # no hook's frame shown
        return ""
    tb = failure(m.context, m.text)
    if tb is None or tb.through is None or tb.call_site < 0:
        return ""
    site = tb.frames[tb.call_site]
    who = site.package or "your code"
    if site.package is None and "unsloth_compiled_cache/" in site.path.replace("\\", "/"):
        who = "Unsloth's generated trainer"  # TRL's trainer as Unsloth rewrote it, not the user's
    return f"raised in {who} ({_short(site)}){through_text(tb)}"


def raised_in(m: Match) -> str:
    """Where the exception of ``m`` was raised: the library of the last frame under
    ``site-packages`` and that frame, else the last frame (the user's code); empty without one.
    An attribute hook's raise is the frame's that asked for the name (``raisethrough``)."""
    handed = _handed_on(m)
    if handed:
        return handed
    lines = list(m.context)
    start = max(
        (i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line), default=-1
    )
    found = [f for line in lines[start + 1 :] if (f := FRAME_FULL.search(line))]
    lib = next(((f, p) for f in reversed(found) if (p := _PACKAGES.search(f.group("path")))), None)
    if lib is None:  # paths cut to the package (``vllm/entrypoints/llm.py``), IPython's frames
        from envdoctor.triage.traceback import failure

        tb = failure(m.context, m.text)
        shown = next((x for x in reversed(tb.frames) if x.package), None) if tb is not None else None
        if shown is not None:
            path = shown.path.replace("\\", "/")
            top = path[: len(path) - len(shown.module_path)].rstrip("/").rsplit("/", 1)[-1]
            short = f"{top}/{shown.module_path}" if top else shown.module_path  # vllm/v1/engine/core.py
            where = f"{short}:{shown.line}" + (f" in {shown.function}" if shown.function else "")
            return f"raised in {shown.package} ({where})"
    if not found:
        return ""
    f = lib[0] if lib else found[-1]
    path = f.group("path").replace("\\", "/")
    short = path[path.find("-packages/") + 10 :] if lib else path.rsplit("/", 1)[-1]
    frame = f"{short}:{f.group('line')}" + (f" in {f.group('func')}" if f.group("func") else "")
    last = found[-1]
    mine = last.group("path").replace("\\", "/")
    if lib and last is not lib[0] and "/lib/python" not in mine and not mine.startswith("<"):
        # the innermost frame is the user's code that the package called (a reward function), or
        # a framework's source checkout (``package_of``: LLaMA-Factory's trainer), never the user's
        from envdoctor.triage.traceback import package_of

        checkout, inside = package_of(mine)
        own = (inside if checkout else mine.rsplit("/", 1)[-1]) + f":{last.group('line')}"
        own += f" in {last.group('func')}" if last.group("func") else ""
        who = checkout or "your code"
        return f"raised in {who} ({own}), called from {lib[1].group('lib')} ({frame})"
    return f"raised in {lib[1].group('lib')} ({frame})" if lib else f"raised in {frame}"


def warning_line(m: Match) -> bool:
    """The line was logged as a warning (vLLM's "WARNING … Failed to import …"): not a failure."""
    return bool(_WARNING.search(m.text[:200])) or in_python_warning(m)


#: a logger's record at warning level, by its level at the line's head (after a process tag):
#: vLLM's ``WARNING 03-06 13:44:18 [x.py:21]``, logging's ``WARNING:name:``, glog's ``[W1218 …``
_LOGGED_WARNING = re.compile(
    r"\s*(?:\([^)]{0,120}\)\s*|\[[^\]]{0,60}\]:?\s*){0,2}(?:WARNING|WARN)(?: \d\d-\d\d |:| \[)|\s*\[W\d{4} "
)
_RAISED = re.compile(r"(?:[A-Za-z_]\w{0,100}\.){0,8}[A-Z]\w{0,100}(?:Error|Exception)\b:?")


def logged_as_warning(m: Match) -> bool:
    """The line is a logger's warning record whose text is no raised exception's line ("WARNING …
    Failed to import from vllm._C with ModuleNotFoundError(…)"), or a warning Python printed: a
    run that goes on, not a crash (``warning_line`` orders failing lines; this decides)."""
    head = _LOGGED_WARNING.match(m.text[:400])
    if head is None:
        return in_python_warning(m)
    return _RAISED.match(m.text[head.end() :].lstrip(" ]")) is None


#: the header of a message Python's ``warnings`` module printed: ``…/x.py:8: RuntimeWarning: …``
#: (a Markdown link around the path kept: ``[/a/x.py:8](https://…): RuntimeWarning: …``)
_PY_WARNING = re.compile(r"\.py:\d{1,9}\]?(?:\([^)\s]{0,600}\))?: [A-Z]\w{0,60}Warning: ")


#: Ray's note on a line its log deduplication folded: `` [repeated 2x across cluster]``
_RAY_DEDUP = re.compile(r"\s*\[repeated \d{1,9}x across cluster\]$")


def in_python_warning(m: Match) -> bool:
    """The line continues a message that Python's ``warnings`` module printed (its header on one
    of the two lines before, ending in a colon): text of a warning, never a raised exception."""
    for before in reversed(m.context[-2:]):
        body = _RAY_DEDUP.sub("", split_prefix(before)[0].rstrip())
        if _PY_WARNING.search(body[:1200]):
            return body.endswith(":")
        if not body or "Traceback (most recent call last)" in body:
            return False
    return False


def versions_note(log: Log | None) -> str:
    if log is None:
        return ""
    if log.versions:
        return f"versions from the log: {describe(dict(log.versions))}"
    return "the log shows no versions"


#: a wrapper's re-raise, whose root failure is another line of the log (torch elastic's, Ray's
#: actors and tasks, vLLM's engine and worker processes)
WRAPPERS = (
    "ChildFailedError",
    "DistBackendError",
    "ProcessExitedException",
    "ActorDiedError",
    "RayActorError",
    "RayTaskError",
    "Engine core initialization failed",
    "EngineDeadError",
    "WorkerProc initialization failed",
    "See root cause above",
    "stack trace above for the root cause",
)
_WRAPPER_FIX = (
    "paste the lines before it: the first traceback of the process that failed (vLLM's engine core or "
    "worker: lines prefixed (EngineCore…) or (VllmWorker…); a Ray actor: (pid=…, ip=…); another rank: "
    "[rankN]:), or the system's log of a killed process (dmesg: 'Out of memory: Killed process', a "
    "segfault), with the versions (`trl env` or pip list)"
)


def unknown_finding(ms: Sequence[Match], log: Log | None = None) -> Finding:
    """No known failure: the first failing line, where it was raised, the versions the log
    shows, and an issue draft (evidence ``issue_draft``) to paste into a report."""
    from envdoctor.rule_docs import rule_docs

    first = ms[0]
    origin = raised_in(first)
    message = f"no known failure recognised; the first exception is at {where(ms[:1])}: “{quote(first)}”" + (
        f", {origin}" if origin else ""
    )
    if any(c in first.text for c in _CONNECTION):
        message += (
            " — the other end (the vLLM server, in server mode) closed or refused the "
            "connection: its own log holds the cause"
        )
    wrapper = any(w in first.text for w in WRAPPERS)
    if wrapper:
        message += (
            " — a wrapper's re-raise: the root failure is in the lines of the process that failed (its "
            "own traceback, or the signal or out-of-memory kill that ended it), which the log does not show"
        )
    note = versions_note(log)
    if note:
        message += f"; {note}"
    ev: dict[str, Any] = {"signature": first.signature.id, "line": first.line_no}
    if origin:
        ev["raised_in"] = origin.removeprefix("raised in ")
    if first.context:
        ev["context"] = list(first.context[-6:])
    if log is not None:
        ev["issue_draft"] = issue_draft(first, origin, log)
    fix = _WRAPPER_FIX if wrapper else rule_docs()["TRI003"].fix
    said = "" if wrapper else own_advice(first, log)
    if said:  # the message names its own lever: quote it (the severity stays: no diagnosis)
        ev["advice"] = said
        fix = f"the message's own advice: “{said}”; if it does not apply, {fix[0].lower()}{fix[1:]}"
    return Finding("TRI003", Severity.WARNING, message, fix, ev)


def own_advice(m: Match, log: Log | None) -> str:
    """The advice sentence of ``m``'s exception message (``advice.advice``), read with the lines
    that continue it where the log's head holds them."""
    from envdoctor.triage.advice import advice
    from envdoctor.triage.rejoin import _following

    body = split_prefix(m.text)[0]
    more: list[str] = []
    if log is not None and log.head and m.line_no > 0:
        lines = log.head.decode("utf-8", errors="replace").split("\n", m.line_no + 8)
        more = _following(lines, m.line_no)
    return advice(body, more)


def issue_draft(m: Match, origin: str, log: Log) -> str:
    """A report to paste into the issue tracker of the library it was raised in."""
    body = cut(split_prefix(m.text)[0], 500)  # each piece redacted before it is cut
    start = max(
        (i for i, line in enumerate(m.context) if "Traceback (most recent call last)" in line),
        default=max(0, len(m.context) - 15),
    )
    trace = [cut(line, 300) for line in m.context[start:][-30:]] + [cut(m.text, 500)]
    versions = (
        [
            f"- {d} {v.range_text()} (inferred from the traceback's frames)"
            if v.inferred
            else f"- {d} {v.version} (log line {v.line})"
            if v.line
            else f"- {d} {v.version}"
            for d, v in sorted(log.versions.items())
        ]
        if log.versions
        else ["- (the log shows none: paste the output of `trl env` or `pip list`)"]
    )
    title = cut(body, 120)
    return "\n".join(
        [
            f"Title: {title}",
            "",
            "### What happened",
            "",
            f"The run failed with `{title}` (line {m.line_no} of the log"
            + (f", {origin}" if origin else "")
            + ").",
            "",
            "### Traceback",
            "",
            "```",
            *trace,
            "```",
            "",
            "### Versions",
            "",
            *versions,
            "",
            "### Reproduction",
            "",
            "(the launch command, the config, and the script's trainer set-up)",
        ]
    )
