"""A big plain log prefiltered by GNU grep: the same result as the Python scan, several times faster.

GNU grep finds all the anchors in one pass (``grep -F``, many literals at once, at about a GB/s
here against ``bytes.find``'s one anchor per pass); it prints the line number and byte offset of
each anchor (``-o -b -n``), and only those places are read back and matched by the scanner's own
code, from blocks read in file order. ``wc -l`` counts the lines beside it. grep runs with the
C locale (bytes, no UTF-8 decoding) and a memory cap: a line too long for the cap (grep keeps a
whole line in memory) makes it fail, and then nothing of its output is used — the caller scans in
Python. So does a missing grep, a grep that is not GNU's (BSD grep's ``-b`` differs), or any error.

A flood of distinct anchor lines (hex ids, words: lines that share no digit shape) had each line's
keywords and gate leads found by Python's tries, two ``findall`` a line at 50-80 ns a byte. Once
``SWITCH_LINES`` lines within ``SWITCH_BYTES`` were, the anchor grep is stopped and the rest of
the log is read by a grep of every literal (anchors, keywords, gate leads) ignoring case, from
the start of the next line: its leftmost-longest records tell exactly which literals a line
holds (``GrepLiterals``), and its lines come from blocks split at newlines (``_Hits.line``).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import os
import resource
import shutil
import subprocess
import sys
import threading
import time

from envdoctor.triage import scanner
from envdoctor.triage.interface import ScanResult, Signature
from envdoctor.triage.literals import GrepLiterals
from envdoctor.triage.logversions import HEAD
from envdoctor.triage.signatures import anchors, signatures

MEMORY_CAP = 256 * 1024 * 1024  # grep's address space; a longer line makes it give up
READ = 256 * 1024
PREFILTER_MIN = 16 * 1024 * 1024  # below, grep's start-up is a good part of the time saved
#: a flood of distinct anchor lines: so many had their keywords looked for within so many bytes
SWITCH_LINES = 4096
SWITCH_BYTES = 2 * 1024 * 1024
_ENV_DROP = ("GREP_OPTIONS", "GREP_COLOR", "GREP_COLORS", "POSIXLY_CORRECT")
#: grep is ended (and the log scanned in Python) when it gives no record and does not end for
#: this many seconds: a wall-clock limit on the whole would end a healthy grep on a loaded
#: machine (it waits on the pipe while the records are matched). A grep that goes on giving
#: records is bounded by the file: its offsets must grow, at most one record a byte.
IDLE_S = 10.0
#: the last bytes of the log whose anchors are looked for in Python too: a line there holding
#: one that grep did not report means its records are not to be trusted
TAIL_CHECK = 1024 * 1024
#: what grep is asked before it is trusted: its records for a known input, as GNU grep gives them
_SELF_TEST = (
    (
        ["-a", "-F", "-o", "-b", "-n", "-e", "needle", "-e", "hay"],
        b"x\nhay needle\n",
        b"2:2:hay\n2:6:needle\n",
    ),
    (["-a", "-F", "-i", "-o", "-b", "-n", "-e", "needle"], b"x\r\n\xff NEEDLE\n", b"2:5:NEEDLE\n"),
)


@functools.lru_cache(maxsize=1)
def gnu_grep() -> str | None:
    """The path of GNU grep, or None (missing, another grep, or it did not answer)."""
    exe = shutil.which("grep")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, timeout=5, env=_env()).stdout
        if not out.startswith(b"grep (GNU grep)"):
            return None
        for args, given, want in _SELF_TEST:  # a grep that claims GNU must also answer as it
            got = subprocess.run([exe, *args], input=given, capture_output=True, timeout=5, env=_env())
            if got.stdout != want:
                return None
    except (OSError, subprocess.SubprocessError):
        return None
    return exe


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
        try:
            out, _ = wc.communicate(timeout=IDLE_S)
        except subprocess.TimeoutExpired:
            wc.kill()
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
        start: int = 0,
        end: int | None = None,
    ) -> None:
        self.path = path
        #: the bytes read: the whole file, or ``[start, end)`` (a range cut just after a newline,
        #: ``split.py``); line numbers then count from ``start``, as the range's Python scan does
        self.start, self.end = start, end
        self.procs: list[subprocess.Popen] = []
        self.grep: subprocess.Popen | None = None
        self.wc: subprocess.Popen | None = None
        self.stop = threading.Event()
        self.timed_out = False
        self.seen = 0  # records (anchor grep) or blocks (literal grep) read: the watchdog's clock
        self.size = 0
        self.tail_start = 0  # where the lines of the tail check start
        self.tail_offsets: list[int] = []  # the records' offsets from there on
        exe = gnu_grep()
        if exe is None:
            return
        anchor_list = anchor_list or anchors()
        self.scanner = scanner.Matcher(sigs or signatures(), anchor_list)
        argv: list[str | bytes] = [exe, "-a", "-F", "-o", "-b", "-n"]
        for kw in anchor_list:
            argv += ["-e", kw]
        try:
            if end is not None:  # a range: grep reads it from ``head -c``, its offsets from start
                self.grep = self._range_proc([*argv, "-"], start, end)
                self.procs.append(self.grep)
                threading.Thread(target=self._watch, name="envdoctor-grep-watchdog", daemon=True).start()
                return
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
            return
        threading.Thread(target=self._watch, name="envdoctor-grep-watchdog", daemon=True).start()

    def _range_proc(self, argv: list[str | bytes], start: int, end: int) -> subprocess.Popen:
        """``argv`` (a grep) reading the file's bytes ``[start, end)`` from ``head -c``."""
        head_exe = shutil.which("head")
        if head_exe is None:
            raise OSError("no head")
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.lseek(fd, start, os.SEEK_SET)
            head = subprocess.Popen(
                [head_exe, "-c", str(end - start)],
                stdin=fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_env(),
            )
        finally:
            os.close(fd)
        self.procs.append(head)
        assert head.stdout is not None
        try:
            proc = subprocess.Popen(
                argv,
                stdin=head.stdout,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_env(),
                preexec_fn=_cap_memory,
            )
        finally:
            head.stdout.close()  # grep holds it now: head ends when grep does
        return proc

    def _watch(self) -> None:
        """End grep and ``wc`` (their output then not used) when grep gave nothing new for
        ``IDLE_S`` while still running."""
        last, idle_since = -1, time.monotonic()
        while not self.stop.wait(min(1.0, IDLE_S / 4)):
            if self.seen != last:
                last, idle_since = self.seen, time.monotonic()
                continue
            if time.monotonic() - idle_since >= IDLE_S:
                self.timed_out = True
                for proc in list(self.procs):
                    with contextlib.suppress(OSError):
                        proc.kill()
                return

    def result(self) -> ScanResult | None:
        """The scan's result; None when grep is not there, gave up, ran past its deadline or
        gave records that the file or the tail check contradicts (scan in Python then)."""
        if self.grep is None:
            return None
        sc, path = self.scanner, self.path
        try:
            size = os.path.getsize(path) if self.end is None else self.end
            fd = os.open(path, os.O_RDONLY)
            self.size = size
            try:
                self.tail_start = _tail_start(fd, size, self.start)
                done = self._match(sc, fd)
                if done and not self.timed_out:
                    done = self._tail_agrees(fd, size)
                if done and self.end is not None:
                    done = _range_ended_well(self.procs[0])
            finally:
                os.close(fd)
            if not done or self.timed_out:  # grep's status 2: an error (the memory cap, an
                return None  # unreadable file), or killed at the deadline
            if self.end is None:
                sc.result.newlines, sc.result.lines = _line_count(path, size, self.wc)
            else:
                sc.result.newlines, sc.result.lines = _range_line_count(path, self.start, size)
            if self.timed_out:
                return None
        except (OSError, ValueError, subprocess.SubprocessError):
            return None
        sc.result.bytes_read = size - self.start
        with open(path, "rb") as fh:
            fh.seek(self.start)
            sc.result.head = fh.read(min(HEAD, size - self.start))
        return sc.result

    def _match(self, sc: scanner.Matcher, fd: int) -> bool:
        """Match the segments holding an anchor, from the anchor grep's ``LINE:OFFSET:ANCHOR``
        records in file order: each once, at its first anchor, as the Python scan does. Once
        ``SWITCH_LINES`` lines within ``SWITCH_BYTES`` had their keywords looked for (a flood of
        distinct lines), the rest of the log is read from the literal grep (``_literal_grep``).
        Whether grep ended well."""
        assert self.grep is not None and self.grep.stdout is not None
        hits = _Hits(sc, fd)
        retired: tuple[bytes, ...] = ()  # ":ANCHOR\n" of the anchors the matcher no longer needs
        check, since = SWITCH_LINES, 0  # look at the density when sc.full reaches check
        last_off, size = -1, self.size
        for rec in self.grep.stdout:
            self.seen += 1
            if self.seen > size - self.start:
                raise ValueError("more records than the file has bytes")
            if retired and rec.endswith(retired):
                continue  # only hints of that anchor, and they have matched
            line_b, _, rest = rec.partition(b":")
            off_b, _, found = rest.partition(b":")
            line, off = int(line_b), int(off_b) + self.start
            if off <= last_off:
                raise ValueError("grep's records are not in file order")
            last_off = off
            if off >= self.tail_start:
                self.tail_offsets.append(off)
            if sc.full >= check and line != hits.last_line:
                if off - since > SWITCH_BYTES:  # sparse: look again over the next lines
                    check, since = sc.full + SWITCH_LINES, off
                else:
                    at = hits.line_start(off)
                    if at is not None:
                        lits = GrepLiterals(sc)
                        if lits.usable:
                            return self._literal_grep(hits, lits, line - 1, at)
                        check = sys.maxsize
            hits.anchor(line, off, found[:-1])
            if len(sc.retired) != len(retired):
                retired = tuple(b":" + a + b"\n" for a in sc.retired)
        return _ended_well(self.grep)

    def _literal_grep(self, hits: _Hits, lits: GrepLiterals, base_line: int, at: int) -> bool:
        """The rest of the log, from the start of line ``base_line + 1`` at byte ``at``, read from
        a grep of all the literals ignoring case (anchors, keywords, the gates' leads): its
        ``LINE:OFFSET:TEXT`` records (both from there) read a block at a time, the literals a
        line holds told from them (``GrepLiterals``) rather than by the Python tries."""
        exe = gnu_grep()
        assert exe is not None and self.grep is not None
        self.grep.kill()
        self.grep.wait()
        if self.end is not None:  # a range: up to its end, from ``head -c``
            head = self.procs[0]
            if head.poll() is None:
                head.kill()
            head.wait()
            if head.stdout is not None:
                head.stdout.close()
            self.procs.remove(head)
            proc = self._range_proc([*literal_argv(exe, lits.all), "-"], at, self.end)
            self.procs.insert(0, self.procs.pop())  # head first, as for the anchor grep
        else:
            rest = os.open(self.path, os.O_RDONLY)
            try:
                os.lseek(rest, at, os.SEEK_SET)
                proc = subprocess.Popen(
                    literal_argv(exe, lits.all),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    stdin=rest,
                    env=_env(),
                    preexec_fn=_cap_memory,
                )
            finally:
                os.close(rest)
        self.procs.append(proc)
        assert proc.stdout is not None
        hits.base, hits.checked = at, False
        pending, cur, long = b"", b"", False  # long: a line of more records than a piece's bytes
        offs: list[bytes] = []
        texts: list[bytes] = []
        line = hits.line
        for block in iter(functools.partial(proc.stdout.read, READ), b""):
            pending += block
            cut = pending.rfind(b"\n")
            if cut < 0:
                continue
            recs, pending = pending[:cut].split(b"\n"), pending[cut + 1 :]
            self.seen += len(recs)
            if self.seen > self.size - self.start:
                raise ValueError("more records than the file has bytes")
            if recs and at + int(recs[-1].split(b":", 2)[1]) >= self.tail_start:
                self.tail_offsets += [at + int(r.split(b":", 2)[1]) for r in recs]
            for rec in recs:
                n, off, text = rec.split(b":", 2)
                if n != cur:
                    if cur:
                        (hits.at_anchors if long else line)(base_line + int(cur), offs, texts, lits)
                    cur, offs, texts, long = n, [off], [text], False
                    continue
                offs.append(off)
                texts.append(text)
                if len(offs) > scanner.WINDOW:  # longer than a piece: at its anchors as they come
                    hits.at_anchors(base_line + int(cur), offs, texts, lits)
                    offs, texts, long = [], [], True
        if pending:
            raise ValueError("grep's last record is cut")
        if cur:
            (hits.at_anchors if long else line)(base_line + int(cur), offs, texts, lits)
        return _ended_well(proc)

    def _tail_agrees(self, fd: int, size: int) -> bool:
        """Whether every line of the log's last ``TAIL_CHECK`` bytes that holds an anchor still
        looked for (``bytes.find`` here) holds a record of grep: a grep that reports nothing, or
        less than it should, is not trusted (its lines would be missed, the crash among them)."""
        start = self.tail_start
        tail = os.pread(fd, size - start, start)
        offsets = sorted(self.tail_offsets)
        for kw in self.scanner.anchors:
            i = tail.find(kw)
            while i >= 0:
                lo = max(tail.rfind(b"\n", 0, i), tail.rfind(b"\r", 0, i)) + 1
                hi = scanner.segment_end(tail, i)
                k = bisect.bisect_left(offsets, start + lo)
                if k == len(offsets) or offsets[k] > start + hi:
                    return False
                i = tail.find(kw, hi)
        return True

    def close(self) -> None:
        self.stop.set()
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


def _ended_well(proc: subprocess.Popen) -> bool:
    """Whether grep, its output read to the end, exits with 0 or 1 within ``IDLE_S``."""
    try:
        return proc.wait(timeout=IDLE_S) in (0, 1)
    except subprocess.TimeoutExpired:
        proc.kill()
        return False


def literal_argv(exe: str, literals: tuple[bytes, ...]) -> list[str | bytes]:
    """GNU grep finding ``literals`` ignoring case (ASCII, the C locale), each leftmost-longest
    place as ``LINE:OFFSET:TEXT``."""
    argv: list[str | bytes] = [exe, "-a", "-F", "-i", "-o", "-b", "-n"]
    for lit in literals:
        argv += ["-e", lit]
    return argv


def scan_grepped(
    path: str, sigs: tuple[Signature, ...] | None = None, anchor_list: tuple[bytes, ...] | None = None
) -> ScanResult | None:
    """Scan the plain-text log at ``path`` with GNU grep finding the anchors; None when grep is
    not there or gave up (the caller scans in Python)."""
    with Grepped(path, sigs, anchor_list) as grepped:
        return grepped.result()


class _Hits:
    """The lines that grep's records name, matched in file order from blocks of ``READ`` bytes read
    in order (dense records share a read, a sparse one costs one)."""

    def __init__(self, sc: scanner.Matcher, fd: int) -> None:
        self.sc, self.fd = sc, fd
        self.start, self.data, self.eof = 0, b"", False  # the block read last
        self.seg_end = -1  # where the last segment looked at ends
        self.last_line = 0  # the line of the last record
        self.base = 0  # the offset that the literal grep's offsets are from
        self.checked = True  # whether its first offset was checked
        self.seg = 0  # where the segment being matched starts
        self._before = self.before  # (bound once: passed for every line)
        #: the literal grep's lines: a block split at newlines (the last one cut unless at the
        #: end), the number of the first, the one looked at last (``ci``) and where it starts
        self.lines: list[bytes] = []
        self.lines_eof = False
        self.first = self.ci = self.cpos = 0

    def _at(self, off: int) -> int:
        """``off``'s index in the block, read again unless it holds ``WINDOW`` bytes either side."""
        i = off - self.start
        if i < min(scanner.WINDOW, off) or (i + scanner.WINDOW > len(self.data) and not self.eof):
            self.start = max(0, off - scanner.WINDOW)
            self.data = os.pread(self.fd, READ, self.start)
            self.eof, i = len(self.data) < READ, off - self.start
        return i

    def anchor(self, line: int, off: int, found: bytes = b"") -> None:
        """The segment holding the anchor at ``off`` of ``line``, once, at its first anchor, as the
        Python scan does. ``found``: what grep says stands there (ValueError when the file does
        not hold it: records that do not fit the file are not used)."""
        self.last_line = line
        if off < self.seg_end:
            return  # a later anchor of a segment already looked at
        window, fd = scanner.WINDOW, self.fd
        i = self._at(off)
        data, start, eof = self.data, self.start, self.eof
        if found and data[i : i + len(found)].lower() != found.lower():
            raise ValueError("grep's record does not fit the file")
        lo, hi = max(0, i - window), min(len(data), i + window)
        s, e = scanner.segment_start(data, i, lo), scanner.segment_end(data, i, hi)
        self.seg_end = start + e if e < hi or hi == len(data) and eof else _segment_end(fd, start + hi)
        # (the segment starts in the block, or at the file's start: else it is looked for back)
        seg = start + s if s > lo or start + lo == 0 else _segment_start(fd, start + lo)
        self.sc.match(data[s:e], line, functools.partial(_before, fd, seg), seg > scanner.HISTORY)

    def at_anchors(self, line: int, offs: list[bytes], texts: list[bytes], lits: GrepLiterals) -> None:
        """Match ``line`` at its anchors within or past ``texts`` (found at ``offs``, in order),
        as the anchor grep's records would have it."""
        if not self.checked and offs:
            self.check(self.base + int(offs[0]), texts[0])
        retired = self.sc.retired
        for off, a in lits.anchors(self.fd, self.base, offs, texts):
            if a not in retired:  # (a hint matched on this line may retire some)
                self.anchor(line, off)

    def check(self, off: int, text: bytes) -> None:
        """Raise ValueError unless the literal grep's first record is the file's: its offsets count
        from where it started reading (GNU grep 3), ``base``."""
        if os.pread(self.fd, len(text), off).lower() != text.lower():
            raise ValueError("the literal grep's offsets are not the file's")
        self.checked = True

    def before(self) -> bytes:
        """The ``HISTORY`` bytes before the segment being matched."""
        return _before(self.fd, self.seg)

    def line_start(self, off: int) -> int | None:
        """Where the line holding ``off`` starts, when the block holds it; else None."""
        i = self._at(off)
        nl = self.data.rfind(b"\n", 0, i)
        if nl < 0 and self.start > 0:
            return None
        return self.start + nl + 1

    def _lines_from(self, line: int, off: int) -> bool:
        """Read the lines from ``line`` (holding ``off``) on, a block of ``READ`` bytes split at
        newlines; False when its start is not found near ``off`` or it is longer than the block."""
        i = self._at(off)
        s = self.data.rfind(b"\n", 0, i) + 1
        if s == 0 and self.start > 0:
            return False
        start = self.start + s
        block = os.pread(self.fd, READ, start)
        self.lines, self.lines_eof = block.split(b"\n"), len(block) < READ
        self.first, self.ci, self.cpos = line, 0, start
        return len(self.lines) > 1 or self.lines_eof

    def line(self, line: int, offs: list[bytes], texts: list[bytes], lits: GrepLiterals) -> None:
        """A line that holds the literals ``texts`` (leftmost-longest, ignoring case) at ``offs``.

        A line of one segment (no carriage return but a last one before its newline) of at most
        ``WINDOW`` bytes is the piece the Python scan matches, taken from the block of lines read
        last: the keywords and leads it holds come from ``texts`` (``GrepLiterals.held``). Any other
        line is matched at its anchors, found within the texts (every anchor there is within or
        begins in one), as the records of the anchor grep."""
        first = self.base + int(offs[0])
        if not self.checked:
            self.check(first, texts[0])
        lines, idx = self.lines, line - self.first
        if not (0 <= idx < len(lines) - 1 or idx == len(lines) - 1 and self.lines_eof):
            idx = 0 if self._lines_from(line, first) else -1
            lines = self.lines
        raw = b""
        if idx >= 0:
            ci = self.ci
            if idx == ci + 1:
                self.cpos += len(lines[ci]) + 1
            elif idx != ci:
                self.cpos += sum(map(len, lines[ci:idx])) + idx - ci
            self.ci = idx
            raw = lines[idx]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if len(raw) > _WINDOW or 13 in raw:  # longer than a piece, or segments
                idx = -1
        if idx < 0:
            self.at_anchors(line, offs, texts, lits)
            return
        seg = self.cpos
        if len(texts) == 1:
            found = lits.at(raw, first - seg, texts[0])
        else:
            found = lits.at_all(raw, [self.base + int(off) - seg for off in offs], texts)
        anchors, held, leads = found
        retired = self.sc.retired
        if not anchors or retired and all(a in retired for a in anchors):
            return  # no anchor (still looked for) in it
        self.seg, self.seg_end = seg, seg + len(raw)
        self.sc.match(raw, line, self._before, seg > _HISTORY, held, None if 0x1B in raw else leads)


_WINDOW, _HISTORY = scanner.WINDOW, scanner.HISTORY


def _tail_start(fd: int, size: int, start: int = 0) -> int:
    """Where the tail check's lines start: the first line start in the last ``TAIL_CHECK``
    bytes before ``size`` (``start`` for a smaller range; ``size`` when no line starts there)."""
    if size - start <= TAIL_CHECK:
        return start
    pos = size - TAIL_CHECK
    head = os.pread(fd, TAIL_CHECK, pos - 1)
    i = max(head.find(b"\n"), -1)
    return size if i < 0 else pos - 1 + i + 1


def _range_ended_well(head: subprocess.Popen) -> bool:
    """Whether ``head``, feeding a range's grep, gave all of it (status 0)."""
    try:
        return head.wait(timeout=IDLE_S) == 0
    except subprocess.TimeoutExpired:
        head.kill()
        return False


def _range_line_count(path: str, start: int, end: int) -> tuple[int, int]:
    """(newlines, lines) of the file's bytes ``[start, end)``, as its Python scan counts them."""
    newlines, tail = 0, b""
    with open(path, "rb") as fh:
        for block in scanner.range_chunks(fh, start, end):
            newlines += block.count(b"\n")
            tail = (tail + block)[-scanner.HISTORY :]
    last = tail[tail.rfind(b"\n") + 1 :]
    return newlines, newlines + (1 if last.strip() else 0)


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
