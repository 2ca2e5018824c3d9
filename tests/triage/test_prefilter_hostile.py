"""A hostile grep on PATH and lines past the history (issue 37): a grep that claims GNU and never
ends, one that finds nothing, one whose records do not fit the file; a match deep in a line longer
than 64 KiB. Bounded, cross-checked, and the Python scan's answer (context lines too) on every
path."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from envdoctor.triage import parallel, prefilter
from tests.triage.test_triage_prefilter import _key, _python, _same
from tests.triage.test_triage_scanner import OOM

pytestmark = pytest.mark.skipif(prefilter.gnu_grep() is None, reason="needs GNU grep")

REAL_GREP = shutil.which("grep")
#: what each fake does when not asked ``--version`` (which each answers as GNU grep does)
FAKES = {
    "never-ends": "exec sleep 1000",
    "finds-nothing": "exit 1",
    # right on standard input (as a self-test would feed it), nothing on a file
    "nothing-on-files": 'case "$*" in *" -- "*) exit 1;; esac\nexec "$REAL" "$@"',
    # every offset off by 7 bytes
    "shifted": (
        'case "$*" in *" -- "*) "$REAL" "$@" | awk -F: \'{ $2 = $2 + 7; print }\' OFS=:; exit 0;; esac\n'
        'exec "$REAL" "$@"'
    ),
}


def _fake(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    script = folder / "grep"
    version = 'if [ "$1" = --version ]; then echo "grep (GNU grep) 3.11"; exit 0; fi'
    script.write_text(f"#!/bin/sh\nREAL={REAL_GREP}\n{version}\n{body}\n")
    script.chmod(0o755)
    for tool in ("wc", "sleep", "awk"):  # the fakes' own tools
        if shutil.which(tool) and not (folder / tool).exists():
            (folder / tool).symlink_to(shutil.which(tool))
    return folder


@pytest.fixture
def log(tmp_path) -> Path:
    path = tmp_path / "train.log"
    filler = b"INFO healthy line of a long run, step %d\n"
    path.write_bytes(b"".join(filler % i for i in range(20_000)) + OOM.encode() + b"\nafter\n")
    return path


@pytest.mark.parametrize("fake", sorted(FAKES))
def test_a_hostile_grep_gives_the_python_scans_answer_in_bounded_time(tmp_path, monkeypatch, log, fake):
    monkeypatch.setattr(prefilter, "IDLE_S", 2.0)
    monkeypatch.setenv("PATH", str(_fake(tmp_path, FAKES[fake])))
    prefilter.gnu_grep.cache_clear()
    try:
        start = time.monotonic()
        assert prefilter.scan_grepped(str(log)) is None
        monkeypatch.setattr(prefilter, "PREFILTER_MIN", 1)
        result = parallel.scan_file(str(log), 1)
        assert time.monotonic() - start < 30  # a guard against a hang, not a timing
        assert result.counts["cuda-oom"] == 1 and _key(result) == _key(_python(log))
    finally:
        monkeypatch.undo()
        prefilter.gnu_grep.cache_clear()


def test_a_silent_grep_and_wc_are_ended(tmp_path, monkeypatch, log):
    monkeypatch.setattr(prefilter, "IDLE_S", 1.0)
    monkeypatch.setenv("PATH", str(_fake(tmp_path, FAKES["never-ends"])))
    prefilter.gnu_grep.cache_clear()
    try:
        with prefilter.Grepped(str(log)) as grepped:
            assert grepped.result() is None
            assert all(p.poll() is not None for p in grepped.procs)
    finally:
        monkeypatch.undo()
        prefilter.gnu_grep.cache_clear()


CONTEXT = b"".join(b"context line %d\n" % i for i in range(60))


@pytest.mark.parametrize(
    "data",
    [
        CONTEXT + b"a" * 70_000 + b" " + OOM.encode() + b"\n",  # the match 70 KB into its line
        CONTEXT + b"a" * 200_000 + b" " + OOM.encode() + b"\nmore\n",
        CONTEXT + b"b" * 70_000 + b"\r" + OOM.encode() + b"\n",  # a redraw after a long segment
        CONTEXT + OOM.encode() + b" " + b"a" * 70_000 + b"\n",
    ],
    ids=["70k-before", "200k-before", "cr-after-70k", "70k-after"],
)
def test_a_match_on_a_line_past_the_history_keeps_the_same_context(tmp_path, data, phase):
    path = tmp_path / "long.log"
    path.write_bytes(data)
    _same(path)
    if b"\r" not in data:  # (a redraw's context is the 64 KiB before its segment: 'b's only)
        assert len(_python(path).matches[0].context) == 40


@pytest.fixture(params=["anchors", "literals"])
def phase(request, monkeypatch):
    if request.param == "literals":
        monkeypatch.setattr(prefilter, "SWITCH_LINES", 0)
        monkeypatch.setattr(prefilter, "SWITCH_BYTES", 1 << 60)
    return request.param
