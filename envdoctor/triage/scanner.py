"""One streaming pass over a log of any size: find known failure lines, with their rank.

The log is read in binary chunks; one compiled alternation of the signatures' literal keywords
finds candidate lines at C speed, and only those lines are decoded, cleaned of ANSI colours and
tqdm carriage returns, and matched against the full patterns. Memory stays bounded: only the
matches (at most ``MAX_PER_SIGNATURE`` each) are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

from envdoctor.triage.signatures import Signature, signatures

CHUNK = 4 * 1024 * 1024
MAX_PER_SIGNATURE = 20
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
RANK = re.compile(r"^\s*\[(?:rank|Rank |default)(\d+)\]|^\s*\[RANK (\d+)\]|^\s*(?:rank|Rank) ?(\d+):"
                  r"|^\s*\((\w+Worker)?\s*(?:rank=|pid=)(\d+)")


@dataclass
class Match:
    signature: Signature
    line_no: int
    text: str
    groups: dict[str, str]
    rank: int | None


@dataclass
class Scan:
    matches: list[Match] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # signature id → lines matched
    ranks: dict[str, set[int]] = field(default_factory=dict)
    bytes_read: int = 0
    lines: int = 0


def _rank(line: str) -> int | None:
    m = RANK.search(line)
    if not m:
        return None
    for g in m.groups():
        if g and g.isdigit():
            return int(g)
    return None


def clean(raw: bytes) -> str:
    """A log line as a person reads it: decoded, colours removed, the last tqdm redraw kept."""
    text = raw.decode("utf-8", errors="replace")
    text = ANSI.sub("", text)
    return text


def scan(stream: BinaryIO | Iterable[bytes], sigs: tuple[Signature, ...] | None = None) -> Scan:
    """Scan ``stream`` (a binary file or an iterable of byte chunks) for known failures."""
    sigs = sigs or signatures()
    finder = re.compile(b"|".join(re.escape(s.keyword) for s in sigs))
    by_keyword: dict[bytes, list[Signature]] = {}
    for s in sigs:
        by_keyword.setdefault(s.keyword, []).append(s)
    result = Scan()
    carry = b""
    line_base = 1
    chunks = iter(lambda: stream.read(CHUNK), b"") if hasattr(stream, "read") else iter(stream)
    for chunk in chunks:
        result.bytes_read += len(chunk)
        data = carry + chunk
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        carry, data = data[cut:], data[:cut]
        _scan_block(data, line_base, finder, by_keyword, result)
        line_base += data.count(b"\n")
    if carry:
        _scan_block(carry, line_base, finder, by_keyword, result)
    result.lines = line_base - 1 + (1 if carry.strip() else 0)
    return result


def _scan_block(data: bytes, line_base: int, finder: re.Pattern[bytes],
                by_keyword: dict[bytes, list[Signature]], result: Scan) -> None:
    last_end = -1
    for hit in finder.finditer(data):
        start = max(data.rfind(b"\n", 0, hit.start()), data.rfind(b"\r", 0, hit.start())) + 1
        if start <= last_end:
            continue  # this line was already matched
        end_n, end_r = data.find(b"\n", hit.end()), data.find(b"\r", hit.end())
        end = min(e for e in (end_n, end_r, len(data)) if e >= 0)
        last_end = end
        line = clean(data[start:end])
        line_no = line_base + data.count(b"\n", 0, start)
        for sig in by_keyword[hit.group(0)]:
            m = sig.pattern.search(line)
            if not m:
                continue
            n = result.counts.get(sig.id, 0)
            result.counts[sig.id] = n + 1
            rank = _rank(line)
            if rank is not None:
                result.ranks.setdefault(sig.id, set()).add(rank)
            if n < MAX_PER_SIGNATURE:
                result.matches.append(Match(sig, line_no, line.strip()[:2000],
                                            {k: v for k, v in m.groupdict().items() if v},
                                            rank))
