"""A big plain log prefiltered by GNU grep: the same result as the Python scan, several times faster.

GNU grep finds all the anchors in one pass (``grep -F``, many literals at once, at about a GB/s
here against ``bytes.find``'s one anchor per pass); it prints the line number and byte offset of
each anchor (``-o -b -n``), and only those places are read back and matched by the scanner's own
code, from blocks read in file order. ``wc -l`` counts the lines beside it. grep runs with the
C locale (bytes, no UTF-8 decoding) and a memory cap: a line too long for the cap (grep keeps a
whole line in memory) makes it fail, and then nothing of its output is used — the caller scans in
Python. So does a missing grep, a grep that is not GNU's (BSD grep's ``-b`` differs), or any error.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import subprocess
from collections.abc import Iterator

from envdoctor.triage import scanner
from envdoctor.triage.interface import ScanResult, Signature
from envdoctor.triage.logversions import HEAD
from envdoctor.triage.signatures import anchors, signatures

MEMORY_CAP = 256 * 1024 * 1024  # grep's address space; a longer line makes it give up
READ = 256 * 1024
PREFILTER_MIN = 16 * 1024 * 1024  # below, grep's start-up is a good part of the time saved
_ENV_DROP = ("GREP_OPTIONS", "GREP_COLOR", "GREP_COLORS", "POSIXLY_CORRECT")


@functools.lru_cache(maxsize=1)
def gnu_grep() -> str | None:
    """The path of GNU grep, or None (missing, another grep, or it did not answer)."""
    exe = shutil.which("grep")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, timeout=5, env=_env()).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return exe if out.startswith(b"grep (GNU grep)") else None


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
    env["LC_ALL"] = "C"
    return env


def _cap_memory() -> None:  # runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _line_count(path: str, size: int, wc: subprocess.Popen | None) -> tuple[int, int]:
    """(newlines, lines) of the file: ``wc -l``'s count, else counted here; the last line counts
    when it is not blank."""
    newlines = None
    if wc is not None:
        out, _ = wc.communicate()
        with contextlib.suppress(ValueError, IndexError):
            newlines = int(out.split()[0]) if wc.returncode == 0 else None
    with open(path, "rb") as fh:
        if newlines is None:
            newlines = sum(block.count(b"\n") for block in iter(lambda: fh.read(scanner.CHUNK), b""))
        fh.seek(max(0, size - scanner.HISTORY))
        tail = fh.read()
    last = tail[tail.rfind(b"\n") + 1 :]
    return newlines, newlines + (1 if last.strip() else 0)


class Grepped:
    """GNU grep and ``wc -l`` started on a log at once (so that they run while the caller does
    other work, e.g. collects facts); ``result()`` matches what grep found. A context manager:
    leaving it ends and reaps both, whatever happened."""

    def __init__(
        self,
        path: str,
        sigs: tuple[Signature, ...] | None = None,
        anchor_list: tuple[bytes, ...] | None = None,
    ) -> None:
        self.path = path
        self.procs: list[subprocess.Popen] = []
        self.grep: subprocess.Popen | None = None
        self.wc: subprocess.Popen | None = None
        exe = gnu_grep()
        if exe is None:
            return
        anchor_list = anchor_list or anchors()
        self.scanner = scanner.Matcher(sigs or signatures(), anchor_list)
        argv: list[str | bytes] = [exe, "-a", "-F", "-o", "-b", "-n"]
        for kw in anchor_list:
            argv += ["-e", kw]
        try:
            wc_exe = shutil.which("wc")
            if wc_exe:
                self.wc = subprocess.Popen(
                    [wc_exe, "-l", "--", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env()
                )
                self.procs.append(self.wc)
            self.grep = subprocess.Popen(
                [*argv, "--", path],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                env=_env(),
                preexec_fn=_cap_memory,
            )
            self.procs.append(self.grep)
        except (OSError, subprocess.SubprocessError):
            self.grep = None

    def result(self) -> ScanResult | None:
        """The scan's result; None when grep is not there or gave up (scan in Python then)."""
        if self.grep is None:
            return None
        sc, path = self.scanner, self.path
        try:
            size = os.path.getsize(path)
            fd = os.open(path, os.O_RDONLY)
            try:
                _match_hits(sc, self.grep.stdout, fd)  # type: ignore[arg-type]
            finally:
                os.close(fd)
            if self.grep.wait() not in (0, 1):  # 2: an error (the memory cap, an unreadable file)
                return None
            sc.result.newlines, sc.result.lines = _line_count(path, size, self.wc)
        except (OSError, ValueError, subprocess.SubprocessError):
            return None
        sc.result.bytes_read = size
        with open(path, "rb") as fh:
            sc.result.head = fh.read(HEAD)
        return sc.result

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()

    def __enter__(self) -> Grepped:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def scan_grepped(
    path: str, sigs: tuple[Signature, ...] | None = None, anchor_list: tuple[bytes, ...] | None = None
) -> ScanResult | None:
    """Scan the plain-text log at ``path`` with GNU grep finding the anchors; None when grep is
    not there or gave up (the caller scans in Python)."""
    with Grepped(path, sigs, anchor_list) as grepped:
        return grepped.result()


def _match_hits(sc: scanner.Matcher, out: Iterator[bytes], fd: int) -> None:
    """Each segment holding an anchor once, at its first anchor, as the Python scan does.

    ``out``: grep's ``LINE:OFFSET:ANCHOR`` lines, in file order; the bytes around each come from
    blocks of ``READ`` bytes read in order (dense hits share a read, a sparse one costs one)."""
    window = scanner.WINDOW
    start, data, eof = 0, b"", False  # the block read last: its offset, bytes, whether it ends the file
    seg_end = -1  # where the last segment looked at ends
    retired: tuple[bytes, ...] = ()  # ":ANCHOR\n" of the anchors the matcher no longer needs
    for rec in out:
        if retired and rec.endswith(retired):
            continue  # only hints of that anchor, and they have matched
        line, _, rest = rec.partition(b":")
        off = int(rest.partition(b":")[0])
        if off < seg_end:
            continue  # a later anchor of a segment already looked at
        i = off - start
        if i < min(window, off) or (i + window > len(data) and not eof):
            start = max(0, off - window)
            data = os.pread(fd, READ, start)
            eof, i = len(data) < READ, off - start
        lo, hi = max(0, i - window), min(len(data), i + window)
        s, e = scanner.segment_start(data, i, lo), scanner.segment_end(data, i, hi)
        seg_end = start + e if e < hi or hi == len(data) and eof else _segment_end(fd, start + hi)
        seg = start + s if s > lo or lo == 0 else _segment_start(fd, start + lo)
        sc.match(data[s:e], int(line), functools.partial(_before, fd, seg), seg > scanner.HISTORY)
        if len(sc.retired) != len(retired):
            retired = tuple(b":" + a + b"\n" for a in sc.retired)


def _before(fd: int, seg: int) -> bytes:
    """The ``HISTORY`` bytes before ``seg`` (fewer at the start of the file)."""
    start = max(0, seg - scanner.HISTORY)
    return os.pread(fd, seg - start, start)


def _segment_end(fd: int, pos: int) -> int:
    """Where the segment going on at ``pos`` ends, looked for at most ``MAX_LINE`` bytes on."""
    start = pos
    while pos - start < scanner.MAX_LINE:
        ahead = os.pread(fd, scanner.HISTORY, pos)
        if not ahead:
            return pos
        i = scanner.segment_end(ahead, 0)
        if i < len(ahead):
            return pos + i
        pos += len(ahead)
    return pos


def _segment_start(fd: int, pos: int) -> int:
    """Where the segment holding ``pos`` starts, looked for at most ``MAX_LINE`` bytes back (a
    piece of a longer line starts where the Python scan cuts it)."""
    lo = pos
    while lo > 0 and pos - lo < scanner.MAX_LINE:
        end, lo = lo, max(0, lo - scanner.HISTORY)
        back = os.pread(fd, end - lo, lo)
        i = max(back.rfind(b"\n"), back.rfind(b"\r"))
        if i >= 0:
            return lo + i + 1
    return lo
