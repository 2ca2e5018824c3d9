"""The fix of a known failure where the run's release is older than the one its fix needs.

A known failure's ``older_fix`` (``rules/knowledge/known_failures/*.yaml``) names a package and the
release its ``fix`` needs (peft's ``target_modules="all-linear"`` arrived in peft 0.8.0). The older
fix is said first where the run's release is older: the log's version (or a ``--facts`` snapshot's,
the node that ran it; never this machine's live one) below it; else, none shown, the failing line
worded as only older releases print it (``shown_by``), or a log whose latest date is before the
release's (``released``): it ran an older one.
"""

from __future__ import annotations

import re
from typing import Any

from envdoctor import versions
from envdoctor.triage.draft import Log
from envdoctor.triage.interface import Match

#: the dates a log's lines carry: ISO (``2023-08-31 12:00:00``) and transformers' logging
#: (``08/31/2023 12:00:00``)
_ISO = re.compile(r"(?<!\d)(20\d\d)-([01]\d)-([0-3]\d)[ T_]\d\d:\d\d")
_US = re.compile(r"(?<![\d/])([01]\d)/([0-3]\d)/(20\d\d) \d\d:\d\d")
MAX_HEAD = 1 << 20


def latest_date(head: bytes) -> str:
    """``2023-08-31``: the latest date of a timestamp in the log's head; "" where none."""
    text = head[:MAX_HEAD].decode("utf-8", errors="replace")
    dates = [f"{y}-{m}-{d}" for y, m, d in _ISO.findall(text)]
    dates += [f"{y}-{m}-{d}" for m, d, y in _US.findall(text)]
    return max(dates, default="")


def _run_version(package: str, log: Log) -> str | None:
    v = log.versions.get(package)
    if v is not None and v.exact:
        return v.version
    ctx = log.ctx
    if ctx is not None and not ctx.facts.live:
        return ctx.version(package)
    return None


def older(older_fix: dict[str, Any], first: Match, log: Log) -> str:
    """Why the run's release is older than ``older_fix['below']`` ("the log shows peft 0.5.0"), or
    "" where nothing shows it."""
    if not older_fix:
        return ""
    package, below = older_fix["package"], older_fix["below"]
    have = _run_version(package, log)
    if have is not None:
        return f"the run's {package} {have} is older than {below}" if versions.below(have, below) else ""
    from envdoctor.knowledge.failures import Symptom

    if any(Symptom(s).found_in(first.text) for s in older_fix.get("shown_by") or ()):
        return f"the message is worded as {package} before {below} prints it"
    released = older_fix.get("released") or ""
    dated = latest_date(log.head) if released and log.head else ""
    if dated and dated < released:
        return f"the log is dated {dated}, before {package} {below} ({released})"
    return ""
