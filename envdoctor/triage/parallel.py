"""A big plain log scanned by several processes: one contiguous range of lines each, merged into
the result one pass would give (line numbers, counts, ranks, the first matches of each signature).

The file is cut at newlines, so no line is split between workers; each worker also reads the
``HISTORY`` bytes before its range, so the first match of a range has its context. Only regular,
plain-text files of at least ``PARALLEL_MIN`` bytes are split; anything else (stdin, compressed or
UTF-16 logs, small files, one CPU) is scanned in one pass. GNU grep, where it is, goes first
(``prefilter``): it is faster than any number of these processes; on a file that is big enough
for both, each process runs GNU grep on its range (``GreppedRanges``): the Python that matches
grep's records (a flood of error lines: ~7 µs a line) is then shared too. A range that grep gives
up on is scanned in Python, so every range gives its Python scan's answer, merged as above.

A log whose first line (up to its first newline or carriage return) is most of it and long (a
single line of a GiB) cannot be cut at newlines; it is cut within that line instead, at
multiples of ``scanner.CHUNK``, where one pass starts a block: each range after the first is
given the bytes one pass holds there (the history and the carry, ``_scan_inline``), so it reads
the same blocks. One pass's state there is a fresh scan's only while nothing has matched: when
the ranges before one did match, the log is scanned again in one pass (that pass skips the rest
of a matched line quickly).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ProcessPoolExecutor

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


def _scan_range(path: str, start: int, end: int) -> ScanResult:
    """Scan ``[start, end)`` of ``path`` (its ``newlines`` say how many lines it covers)."""
    with open(path, "rb") as fh:
        history_start = max(0, start - scanner.HISTORY)
        fh.seek(history_start)
        history = fh.read(start - history_start)  # the bytes a whole-file scan has before it
        return scanner.scan(scanner.range_chunks(fh, start, end), history=history, offset=start)


def _grep_range(path: str, start: int, end: int) -> ScanResult:
    """``[start, end)`` of ``path`` with GNU grep finding its anchors; in Python if grep gave up."""
    with prefilter.Grepped(path, start=start, end=end) as grepped:
        found = grepped.result()
    return found if found is not None else _scan_range(path, start, end)


def _ranges(path: str, size: int, n: int) -> list[tuple[int, int]]:
    cuts = _cuts(path, size, n)
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


class GreppedRanges:
    """A big plain log cut into one range of lines per CPU, each read by GNU grep in a process of
    its own, started at once (they run while the caller collects facts); ``result()`` merges
    them. Used as ``prefilter.Grepped`` is (a context manager that ends the processes)."""

    def __init__(self, path: str, n: int | None = None) -> None:
        self.path = path
        n = workers() if n is None else max(1, n)
        self.ranges = _ranges(path, os.path.getsize(path), n)
        self.pool = ProcessPoolExecutor(max_workers=len(self.ranges))
        self.futures: list[Future[ScanResult]] = [
            self.pool.submit(_grep_range, path, a, b) for a, b in self.ranges
        ]

    def result(self) -> ScanResult:
        return merge([f.result() for f in self.futures])

    def close(self) -> None:
        for f in self.futures:
            f.cancel()
        self.pool.shutdown(wait=True)

    def __enter__(self) -> GreppedRanges:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def split_grep(path: str, size: int, n: int | None = None) -> bool:
    """Whether the plain log at ``path`` of ``size`` bytes is read by GNU grep in ranges: big
    enough for both the prefilter and the parallel scan, more than one CPU, GNU grep there."""
    n = workers() if n is None else n
    return n > 1 and size >= max(PARALLEL_MIN, prefilter.PREFILTER_MIN) and prefilter.gnu_grep() is not None


class NotGrepped:
    """In place of grep for a log of one long line (grep would keep it whole in memory): its
    ``result()`` is None, so the caller scans it (``scan_file``)."""

    def result(self) -> None:
        return None

    def __enter__(self) -> NotGrepped:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def grepper(path: str) -> prefilter.Grepped | GreppedRanges | NotGrepped:
    """GNU grep started on the big plain log at ``path``: in ranges (``split_grep``) or whole;
    not for a log of one long line (``long_first_line``)."""
    size = os.path.getsize(path)
    if long_first_line(path, size, workers()):
        return NotGrepped()
    if split_grep(path, size):
        signatures(), anchors()  # loaded once, before the processes are forked
        return GreppedRanges(path)
    return prefilter.Grepped(path)


def first_end(path: str) -> int:
    """Where the log's first line (or the first segment of it, before a carriage return) ends;
    its size when it holds neither."""
    with open(path, "rb") as fh:
        pos = 0
        for block in iter(lambda: fh.read(scanner.CHUNK), b""):
            ends = [i for i in (block.find(b"\n"), block.find(b"\r")) if i >= 0]
            if ends:
                return pos + min(ends)
            pos += len(block)
    return pos


def long_first_line(path: str, size: int, n: int) -> int:
    """Where the long first line that the log is cut within ends (``first_end``); 0 when it is not
    cut so: one CPU, a small log, or a first line shorter than half the log (the rest is cut at
    newlines, and read by grep)."""
    if n == 1 or size < PARALLEL_MIN:
        return 0
    with open(path, "rb") as fh:
        head = fh.read(PARALLEL_MIN // 2)
    if b"\n" in head or b"\r" in head:
        return 0
    end = first_end(path)
    return end if 2 * end >= size and end >= 2 * scanner.CHUNK else 0


def _inline_ranges(size: int, end: int, n: int) -> list[tuple[int, int]]:
    """``n`` ranges at most, cut at multiples of ``CHUNK`` before ``end`` (the first line's end)."""
    cuts = [0]
    for i in range(1, n):
        at = min(size * i // n, end) // scanner.CHUNK * scanner.CHUNK
        if at > cuts[-1]:
            cuts.append(at)
    return list(zip(cuts, [*cuts[1:], size], strict=True))


def _scan_inline(path: str, start: int, end: int, last: bool) -> ScanResult:
    """Scan ``[start, end)`` of ``path``, both in the log's first line (``end`` too unless
    ``last``) and multiples of ``CHUNK``, as one pass reads it there."""
    with open(path, "rb") as fh:
        history = carry = b""
        if start:
            longest = max(len(a) for a in anchors())
            cut = start - longest + 1  # where one pass cut the block before (no newline in it)
            fh.seek(max(0, cut - scanner.HISTORY))
            history = fh.read(cut - max(0, cut - scanner.HISTORY))
            carry = fh.read(start - cut)
        return scanner.scan(
            scanner.range_chunks(fh, start, end), history=history, offset=start, carry=carry, flush=last
        )


def scan_long_line(path: str, size: int, end: int, n: int) -> ScanResult:
    """The log whose first line ends at ``end`` scanned in ``n`` ranges cut within it (one pass
    when something matched before a cut)."""
    ranges = _inline_ranges(size, end, n)
    if len(ranges) == 1:
        with open(path, "rb") as fh:
            return scanner.scan(fh)
    with ProcessPoolExecutor(max_workers=len(ranges)) as pool:
        futures = [
            pool.submit(_scan_inline, path, a, b, i == len(ranges) - 1) for i, (a, b) in enumerate(ranges)
        ]
        parts = [f.result() for f in futures]
    if any(part.counts for part in parts[:-1]):  # one pass had a state of its own at a cut
        with open(path, "rb") as fh:
            return scanner.scan(fh)
    return merge(parts)


def merge(parts: list[ScanResult]) -> ScanResult:
    """One result from the results of consecutive ranges."""
    out = ScanResult(head=parts[0].head if parts else b"")
    base = 0
    kept: dict[str, int] = {}
    first_only = scanner.once(signatures(), anchors())  # counted at their first match only
    for i, part in enumerate(parts):
        nth: dict[str, int] = {}  # a signature's matches so far in this part
        for m in part.matches:
            m.line_no += base
            sid = m.signature.id
            j = nth[sid] = nth.get(sid, -1) + 1
            # its context kept as one pass keeps it: when its count before it (the counts of the
            # parts before, then one a match until the signature is kept enough) is small
            if out.counts.get(sid, 0) + j >= scanner.CONTEXT_PER_SIGNATURE:
                m.context = ()
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
    out.newlines = base
    return out


def scan_file(path: str, n: int | None = None, grep: bool = True) -> ScanResult:
    """Scan the plain-text log at ``path``: with GNU grep finding the anchors when it is big enough
    (and ``grep``), else in ``n`` processes when it is big enough, else in one pass."""
    size = os.path.getsize(path)
    n = workers() if n is None else max(1, n)
    long_line = long_first_line(path, size, n)
    if long_line:
        return scan_long_line(path, size, long_line, n)
    if grep and split_grep(path, size, n):
        with GreppedRanges(path, n) as grepped:
            return grepped.result()
    if grep and size >= prefilter.PREFILTER_MIN:
        found = prefilter.scan_grepped(path)
        if found is not None:
            return found
    if n == 1 or size < PARALLEL_MIN:
        with open(path, "rb") as fh:
            return scanner.scan(fh)
    ranges = _ranges(path, size, n)
    if len(ranges) == 1:
        with open(path, "rb") as fh:
            return scanner.scan(fh)
    with ProcessPoolExecutor(max_workers=len(ranges)) as pool:
        parts = list(pool.map(_scan_range, [path] * len(ranges), *zip(*ranges, strict=True)))
    return merge(parts)
