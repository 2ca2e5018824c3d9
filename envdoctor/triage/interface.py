"""The contract of triage: signatures (data), the matches a scan yields, and the scan's totals."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envdoctor.findings import Severity

HEAD = 1024 * 1024  # bytes of a log's start read for environment reports (versions)


@dataclass(frozen=True)
class Signature:
    """One known failure as a log shows it (an entry of ``rules/triage/signatures.yaml``).

    ``keywords`` are literal byte strings found first (fast); ``pattern`` is then searched in the
    cleaned line. ``confirm`` names the facts of the judged machine that confirm it (see
    ``envdoctor.triage.confirm``). A ``fallback`` signature is reported only when nothing else is;
    a ``hint`` is never reported itself (it informs the diagnosis of other lines).
    """

    id: str
    rule: str
    summary: str
    keywords: tuple[bytes, ...]
    pattern: re.Pattern[str]
    references: tuple[str, ...]
    confirm: tuple[tuple[str, Any], ...] = ()
    severity: Severity = Severity.ERROR
    fallback: bool = False
    hint: bool = False
    keep: int = 0  # matches kept (0: the scanner's default, one for a hint)

    @property
    def confirm_map(self) -> dict[str, Any]:
        return dict(self.confirm)


@dataclass
class Match:
    """A log line that matched a signature: where, what it said, and the rank that printed it.

    ``text`` is the cleaned line (colours and tqdm redraws removed); ``groups`` the pattern's named
    groups that matched; ``context`` up to a few dozen lines before it from the same rank (kept for
    the first matches of each signature only).
    """

    signature: Signature
    line_no: int
    text: str
    groups: dict[str, str]
    rank: int | None
    context: tuple[str, ...] = ()


@dataclass
class ScanResult:
    """What one pass over a log found; ``counts`` and ``ranks`` cover every match, kept or not."""

    matches: list[Match] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    ranks: dict[str, set[int]] = field(default_factory=dict)
    bytes_read: int = 0
    lines: int = 0
    newlines: int = 0
    last_line: dict[str, int] = field(default_factory=dict)  # signature -> last line it matched
    head: bytes = b""  # the log's first bytes (logversions.HEAD): its environment report, if any
