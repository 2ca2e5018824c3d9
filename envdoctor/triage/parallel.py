"""A big plain log scanned by several processes: one contiguous range of lines each, merged into
the result one pass would give (line numbers, counts, ranks, the first matches of each signature).

The file is cut at newlines, so no line is split between workers; each worker also reads the
``HISTORY`` bytes before its range, so the first match of a range has its context. Only regular,
plain-text files of at least ``PARALLEL_MIN`` bytes are split; anything else (stdin, compressed or
UTF-16 logs, small files, one CPU) is scanned in one pass. GNU grep, where it is, goes first
(``prefilter``): it is faster than any number of these processes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import BinaryIO

from envdoctor.triage import prefilter, scanner
from envdoctor.triage.interface import ScanResult
from envdoctor.triage.signatures import anchors, signatures

PARALLEL_MIN = 64 * 1024 * 1024  # smaller logs take less than the workers' start-up
MAX_WORKERS = 8


def workers() -> int:
    """How many processes may scan: the CPUs this process may run on (at most ``MAX_WORKERS``)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_WORKERS))


def _cuts(path: str, size: int, n: int) -> list[int]:
    """``n + 1`` offsets from 0 to ``size``, each inner one just after a newline."""
    cuts = [0]
    with open(path, "rb") as fh:
        for i in range(1, n):
            fh.seek(max(size * i // n, cuts[-1]))
            while True:
                block = fh.read(64 * 1024)
                if not block:
                    return [*cuts, size]
                nl = block.find(b"\n")
                if nl >= 0:
                    cuts.append(fh.tell() - len(block) + nl + 1)
                    break
    return [*cuts, size]


def _range_chunks(fh: BinaryIO, start: int, end: int) -> Iterator[bytes]:
    fh.seek(start)
    left = end - start
    while left > 0:
        block = fh.read(min(scanner.CHUNK, left))
        if not block:
            return
        left -= len(block)
        yield block


def _scan_range(path: str, start: int, end: int) -> ScanResult:
    """Scan ``[start, end)`` of ``path`` (its ``newlines`` say how many lines it covers)."""
    with open(path, "rb") as fh:
        history_start = max(0, start - scanner.HISTORY)
        fh.seek(history_start)
        history = fh.read(start - history_start)  # the bytes a whole-file scan has before it
        return scanner.scan(_range_chunks(fh, start, end), history=history, offset=start)


def merge(parts: list[ScanResult]) -> ScanResult:
    """One result from the results of consecutive ranges."""
    out = ScanResult(head=parts[0].head if parts else b"")
    base = 0
    kept: dict[str, int] = {}
    first_only = scanner.once(signatures(), anchors())  # counted at their first match only
    for i, part in enumerate(parts):
        for m in part.matches:
            m.line_no += base
            if kept.get(m.signature.id, 0) < scanner.keep(m.signature):
                kept[m.signature.id] = kept.get(m.signature.id, 0) + 1
                out.matches.append(m)
        # a first-only hint is taken from the first range that has it, as one scan takes it
        skip = {sid for sid in part.counts if sid in first_only and sid in out.counts}
        for sid, n in part.counts.items():
            if sid not in skip:
                out.counts[sid] = out.counts.get(sid, 0) + n
        for sid, ranks in part.ranks.items():
            if sid not in skip:
                out.ranks.setdefault(sid, set()).update(ranks)
        for sid, line in part.last_line.items():
            if sid not in skip:
                out.last_line[sid] = line + base
        out.bytes_read += part.bytes_read
        if i == len(parts) - 1:
            out.lines = base + part.lines
        base += part.newlines
    return out


def scan_file(path: str, n: int | None = None, grep: bool = True) -> ScanResult:
    """Scan the plain-text log at ``path``: with GNU grep finding the anchors when it is big enough
    (and ``grep``), else in ``n`` processes when it is big enough, else in one pass."""
    size = os.path.getsize(path)
    if grep and size >= prefilter.PREFILTER_MIN:
        found = prefilter.scan_grepped(path)
        if found is not None:
            return found
    n = workers() if n is None else max(1, n)
    if n == 1 or size < PARALLEL_MIN:
        with open(path, "rb") as fh:
            return scanner.scan(fh)
    cuts = _cuts(path, size, n)
    ranges = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    if len(ranges) == 1:
        with open(path, "rb") as fh:
            return scanner.scan(fh)
    with ProcessPoolExecutor(max_workers=len(ranges)) as pool:
        parts = list(pool.map(_scan_range, [path] * len(ranges), *zip(*ranges, strict=True)))
    return merge(parts)
