"""GNU grep as the prefilter of a big plain log: the Python scan's result, or no result at all."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envdoctor.triage import parallel, prefilter, scanner
from tests.triage.test_triage_scanner import OOM, TIMEOUT, messy_log

ROOT = Path(__file__).resolve().parents[2]
REAL = sorted((ROOT / "tests" / "triage" / "real").glob("*.yaml"))
SYNTHETIC = sorted((ROOT / "tests" / "triage" / "logs").glob("*.log"))

pytestmark = pytest.mark.skipif(prefilter.gnu_grep() is None, reason="needs GNU grep")


def _key(result, context: bool = True):
    matches = [
        (m.signature.id, m.line_no, m.text, m.groups, m.rank, m.context if context else ())
        for m in result.matches
    ]
    return (
        matches,
        result.counts,
        result.ranks,
        result.lines,
        result.newlines,
        result.last_line,
        result.bytes_read,
    )


def _python(path: Path):
    with open(path, "rb") as fh:
        return scanner.scan(fh)


@pytest.fixture(params=["anchors", "literals"])
def phase(request, monkeypatch):
    """The prefilter as it starts (the anchor grep) or as a flood makes it go on (the literal
    grep, here from the first line on)."""
    if request.param == "literals":
        monkeypatch.setattr(prefilter, "SWITCH_LINES", 0)
        monkeypatch.setattr(prefilter, "SWITCH_BYTES", 1 << 60)
    return request.param


def _same(path: Path, context: bool = True) -> None:
    grepped = prefilter.scan_grepped(str(path))
    assert grepped is not None
    assert _key(grepped, context) == _key(_python(path), context)


def _variants(text: str) -> list[bytes]:
    data = text.encode()
    return [data, data.replace(b"\n", b"\r\n"), (data.rstrip(b"\n") + b"\n") * 3, data + b"tail"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_every_real_log_gives_what_the_python_scan_gives(tmp_path, path, phase):
    log = yaml.safe_load(path.read_text(encoding="utf-8"))["log"]
    for i, data in enumerate(_variants(log)):
        target = tmp_path / f"{i}.log"
        target.write_bytes(data)
        _same(target)


@pytest.mark.parametrize("path", SYNTHETIC, ids=lambda p: p.stem)
def test_every_test_log_gives_what_the_python_scan_gives(path, phase):
    _same(path)


def test_messy_multi_rank_log_beyond_the_keep_limit(tmp_path, phase):
    data, _ = messy_log()
    data = data * 7 + b"\n\n" + (OOM.encode() + b"\n") * 60 + data + b"no newline at the end"
    path = tmp_path / "big.log"
    path.write_bytes(data)
    _same(path)
    assert prefilter.scan_grepped(str(path)).counts["cuda-oom"] == 68


PIECES = [
    b"ValueError: bad",
    OOM.encode(),
    TIMEOUT.format(r=3).encode(),
    b"Server is not up yet",
    b"\r",
    b"\n",
    b"\r\n",
    b"plain text ",
    b"[rank1]: ",
    b"LLM engine (v0.7.2)",
    b"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
    b"undefined symbol: _ZN3c10",
    b"Exception: boom",
    b"\x1b[31m",
    b"\xff\xfe",
    # hints whose anchors retire after their first match (scanner.Matcher.once)
    b"Capturing CUDA graphs (FULL):  50%|",
    b"(EngineCore pid=7) Capturing CUDA graphs (",
    b"Loading safetensors checkpoint shards: 100% Completed | 1/1",
]


@pytest.mark.parametrize("seed", range(40))
def test_random_logs_with_long_lines_and_redraws(tmp_path, seed, phase):
    """Segments longer than the window either side of an anchor, lines of 70 KB (beyond the
    history), carriage returns: the same lines, counts and ranks; the context too where no line
    is longer than the history (beyond it the Python scan keeps part of a cut line)."""
    rng = random.Random(seed)
    parts = []
    for _ in range(rng.randrange(1, 80)):
        if rng.random() < 0.12:
            parts.append(b"a" * rng.choice([10, 4000, 4100, 9000, 70000]))
        else:
            parts.append(rng.choice(PIECES))
    data = b"".join(parts)
    path = tmp_path / "random.log"
    path.write_bytes(data)
    longest = max(len(line) for line in data.split(b"\n"))
    _same(path, context=longest < scanner.HISTORY // 2)


def test_a_line_too_long_for_the_memory_cap_gives_no_result(tmp_path, monkeypatch):
    """grep keeps a whole line in memory: past the cap it gives up, and nothing of it is used."""
    path = tmp_path / "one-line.log"
    path.write_bytes(OOM.encode() + b"\n" + b"x" * (48 * 1024 * 1024) + b" ValueError: boom\n")
    monkeypatch.setattr(prefilter, "MEMORY_CAP", 32 * 1024 * 1024)
    assert prefilter.scan_grepped(str(path)) is None
    monkeypatch.setattr(prefilter, "PREFILTER_MIN", 1)
    result = parallel.scan_file(str(path), 1)
    assert result.counts["cuda-oom"] == 1 and _key(result) == _key(_python(path))


def test_no_grep_or_another_grep_means_the_python_scan(tmp_path, monkeypatch):
    path = tmp_path / "big.log"
    path.write_bytes((OOM + "\n").encode())
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "grep").write_text("#!/bin/sh\necho 'grep (BSD grep, GNU compatible) 2.6.0-FreeBSD'\n")
    (fake / "grep").chmod(0o755)
    try:
        monkeypatch.setenv("PATH", str(fake))
        prefilter.gnu_grep.cache_clear()
        assert prefilter.gnu_grep() is None and prefilter.scan_grepped(str(path)) is None
        monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
        prefilter.gnu_grep.cache_clear()
        assert prefilter.scan_grepped(str(path)) is None
        monkeypatch.setattr(prefilter, "PREFILTER_MIN", 1)
        assert parallel.scan_file(str(path), 1).counts["cuda-oom"] == 1
    finally:
        monkeypatch.undo()
        prefilter.gnu_grep.cache_clear()


def test_grep_and_wc_end_when_the_scan_fails(tmp_path, monkeypatch):
    """An exception while matching (Ctrl-C, a bug) ends the helpers at once."""
    path = tmp_path / "big.log"
    path.write_bytes((OOM + "\n").encode() * 200_000)
    started: list[subprocess.Popen] = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(prefilter.subprocess, "Popen", popen)
    monkeypatch.setattr(prefilter._Hits, "anchor", boom)
    with pytest.raises(KeyboardInterrupt):
        prefilter.scan_grepped(str(path))
    helpers = [p for p in started if "--version" not in p.args]
    assert len(helpers) == 2 and all(p.returncode is not None for p in helpers)  # reaped
    grep = next(p for p in helpers if "-F" in p.args)
    assert grep.returncode == -9  # killed while its output (6 MB) waited in the pipe


def test_the_cli_takes_the_prefilter_for_a_big_log_and_reports_the_same(tmp_path):
    data, oom_line = messy_log()
    filler = b"INFO 11-01 10:00:00 [engine.py:1] healthy line of a long run\n" * 300_000
    path = tmp_path / "train.log"
    path.write_bytes(filler + data)
    assert path.stat().st_size >= prefilter.PREFILTER_MIN
    cmd = [sys.executable, "-m", "envdoctor", "triage", str(path), "--format", "json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 1, out.stderr
    assert f"line {300_000 + oom_line}" in out.stdout or str(300_000 + oom_line) in out.stdout
    no_grep = {**env, "PATH": str(tmp_path / "nowhere")}
    slow = subprocess.run(cmd, capture_output=True, text=True, env=no_grep, timeout=300)
    assert slow.returncode == 1 and slow.stdout == out.stdout
