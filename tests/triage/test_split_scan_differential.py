"""A big plain log read by several processes gives one process's answer, field for field (issue
37's floods): GNU grep in one range of lines per process (``GreppedRanges``), and a log of one long
line cut within it (``scan_long_line``). Ranks, counts, matches with their context, lines: the
same, with range boundaries inside a line (the cut moves to its end), inside a traceback, on a
huge line, in a flood that switches to the literal grep, and where grep gives up on a range."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.triage import parallel, prefilter, scanner
from tests.triage.test_scan_paths_differential import _LOGS
from tests.triage.test_triage_prefilter import _key
from tests.triage.test_triage_scanner import OOM, messy_log

needs_grep = pytest.mark.skipif(prefilter.gnu_grep() is None, reason="needs GNU grep")

TRACEBACK = (
    b"[rank1]: Traceback (most recent call last):\n"
    b'[rank1]:   File "/work/train.py", line 12, in <module>\n'
    b"[rank1]:     trainer.train()\n"
    b'[rank1]:   File "/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 9\n'
    b"[rank1]:     self._generate()\n"
    b"[rank1]: ValueError: distinct failure in a traceback\n"
)


def _one_pass(path: Path) -> tuple:
    with open(path, "rb") as fh:
        return _key(scanner.scan(fh))


def _grepped_ranges(path: Path, n: int) -> tuple:
    with parallel.GreppedRanges(str(path), n) as ranges:
        return _key(ranges.result())


def _flood(lines: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    line = b"ValueError: distinct failure number %d token %08x\n"
    return b"".join(line % (i, rng.getrandbits(32)) for i in range(lines))


@needs_grep
@pytest.mark.parametrize("n", [2, 3, 5])
def test_grep_ranges_give_one_process_answer_on_a_flood(tmp_path, monkeypatch, n):
    """Distinct error lines (the literal grep takes over in each range), tracebacks, OOMs beyond
    the matches kept, a last line without a newline: every range's grep answer is its Python
    scan's, and the merge is one pass's (context too: only a signature's first matches keep it)."""
    monkeypatch.setattr(prefilter, "SWITCH_LINES", 64)
    data, _ = messy_log()
    body = data * 3 + _flood(6000) + TRACEBACK * 40 + (OOM.encode() + b"\n") * 60 + _flood(3000, 1) + data
    path = tmp_path / "flood.log"
    path.write_bytes(body + b"no newline at the end")
    want = _one_pass(path)
    assert want[1]["cuda-oom"] > scanner.KEEP_PER_SIGNATURE
    ranges = parallel._ranges(str(path), path.stat().st_size, n)
    assert len(ranges) == n
    for start, end in ranges:
        assert _key(parallel._grep_range(str(path), start, end)) == _key(
            parallel._scan_range(str(path), start, end)
        )
    assert _grepped_ranges(path, n) == want


@needs_grep
def test_a_boundary_inside_a_traceback_keeps_its_context(tmp_path):
    """The cut falls among a traceback's frames: the match after it has the frames before the
    cut as context, as in one pass."""
    head = b"plain line\n" * 5000
    path = tmp_path / "tb.log"
    path.write_bytes(head + TRACEBACK + head)
    size = path.stat().st_size
    cuts = parallel._cuts(str(path), size, 2)
    assert len(head) + 100 < cuts[1] <= len(head) + TRACEBACK.index(b"[rank1]: ValueError")
    want = _one_pass(path)
    match = next(m for m in want[0] if m[0] == "unrecognized-exception" or "ValueError" in m[2])
    assert any("Traceback" in line for line in match[5])
    assert _grepped_ranges(path, 2) == want


@needs_grep
def test_a_range_grep_gives_up_on_is_scanned_in_python(tmp_path, monkeypatch):
    """A line too long for grep's memory cap in one range: that range is read in Python, the
    other by grep; the answer is one pass's."""
    monkeypatch.setattr(prefilter, "MEMORY_CAP", 24 * 1024 * 1024)
    first = _flood(2000) + b"x" * (32 * 1024 * 1024) + b" " + OOM.encode() + b"\n"
    path = tmp_path / "huge.log"
    path.write_bytes(first + _flood(50_000, 2) + TRACEBACK)
    size = path.stat().st_size
    (a, b), (c, d) = parallel._ranges(str(path), size, 2)
    with prefilter.Grepped(str(path), start=a, end=b) as grepped:
        assert grepped.result() is None  # grep gave up on the huge line
    with prefilter.Grepped(str(path), start=c, end=d) as grepped:
        assert grepped.result() is not None
    want = _one_pass(path)
    assert want[1]["cuda-oom"] == 1
    assert _grepped_ranges(path, 2) == want


@needs_grep
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_LOGS, n=st.sampled_from([2, 3]))
def test_grep_ranges_on_generated_logs(data, n):
    """Long lines, CRLF, NUL bytes, non-UTF-8, colours, redraws (the paths' differential logs)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gen.log"
        path.write_bytes(data)
        assert _grepped_ranges(path, n) == _one_pass(path)


C = scanner.CHUNK


def _printable(size: int, seed: int = 0) -> bytes:
    table = bytes(32 + i % 95 for i in range(256))
    return random.Random(seed).randbytes(size).translate(table)


@pytest.mark.parametrize(
    "name",
    ["printable", "then lines", "oom first", "oom late", "oom across a cut", "error first", "cr late"],
)
@pytest.mark.parametrize("n", [2, 3, 4])
def test_one_long_line_cut_within_gives_one_process_answer(tmp_path, name, n):
    """A log of one long line (no newline, or one late) cut within it at one pass's blocks: the
    same answer, whether nothing matches, a match is before a cut (one pass again), after one,
    or across one (a match's bytes on both sides of it)."""
    oom = b" " + OOM.encode()
    data = {
        "printable": _printable(9 * C + 12345),
        "then lines": _printable(9 * C + 5) + b"\n" + TRACEBACK + b"ok\n" * 1000,
        "oom first": OOM.encode() + b" " + b"y" * (10 * C),
        "oom late": b"y" * (7 * C - 3) + oom + b"y" * (3 * C),
        "oom across a cut": b"y" * (4 * C - 20) + oom + b"y" * (4 * C),
        "error first": b"ValueError: boom " + b"z" * (9 * C),
        "cr late": _printable(8 * C, 1) + b"\r" + oom + b"\r" + b"y" * 100,
    }[name]
    path = tmp_path / "line.log"
    path.write_bytes(data)
    size = len(data)
    end = parallel.first_end(str(path))
    ranges = parallel._inline_ranges(size, end, n)
    assert len(ranges) == n and all(b % C == 0 for _, b in ranges[:-1])
    assert _key(parallel.scan_long_line(str(path), size, end, n)) == _one_pass(path)


def test_only_a_log_mostly_of_one_long_line_is_cut_within(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 4 * C)
    path = tmp_path / "line.log"
    path.write_bytes(b"y" * (5 * C) + b"\n" + b"ok\n" * 1000)
    assert parallel.long_first_line(str(path), path.stat().st_size, 2) == 5 * C
    assert parallel.long_first_line(str(path), path.stat().st_size, 1) == 0  # one CPU
    with parallel.grepper(str(path)) as grepped:  # grep would hold the line whole: not started
        assert isinstance(grepped, parallel.NotGrepped) or parallel.workers() == 1
    path.write_bytes(b"y" * (5 * C) + b"\n" + b"ok\n" * (3 * C))  # the line is not most of it
    assert parallel.long_first_line(str(path), path.stat().st_size, 2) == 0
    path.write_bytes(b"ok\n" + b"y" * (8 * C))  # a short first line: cut at newlines
    assert parallel.long_first_line(str(path), path.stat().st_size, 2) == 0
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    assert _key(parallel.scan_file(str(path), 2, grep=False)) == _one_pass(path)
