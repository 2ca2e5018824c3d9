"""GNU grep as the prefilter of a big plain log: the Python scan's result, or no result at all."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envdoctor.triage import combine, literals, parallel, prefilter, scanner
from envdoctor.triage.signatures import anchors, signatures
from tests.triage.test_triage_scanner import FLOODS, OOM, TIMEOUT, messy_log
from tests.triage.test_triage_scanner import REAL as FAILURES

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


@pytest.fixture(autouse=True)
def _patient_grep(monkeypatch):
    """These tests compare grep's answers with the Python scan's; on a loaded machine grep may sit
    idle past ``IDLE_S`` and be given up on (the Python scan then answers, by design: that
    watchdog is tests/triage/test_prefilter_hostile.py's). Here it waits."""
    monkeypatch.setattr(prefilter, "IDLE_S", 300.0)


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
    history), carriage returns: the same lines, counts, ranks and context (issue 37: past the
    history the Python scan kept part of a cut line, the prefilter none of a long one)."""
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
    _same(path)


def test_a_line_too_long_for_the_memory_cap_gives_no_result(tmp_path, monkeypatch, phase):
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
    helpers = [p for p in started if str(path) in p.args]  # not gnu_grep()'s own questions
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


def _literals() -> literals.GrepLiterals:
    return literals.GrepLiterals(scanner.Matcher(signatures(), anchors()))


def _tricky_pieces(rng: random.Random) -> list[bytes]:
    """Literals of every kind in any case, cut and joined so that they overlap, and the bytes
    that a gate or a line's segments care about."""
    lits = list(_literals().all)
    pieces = [
        b"ValueError: ",
        b"VALUEERROR: ",
        b"Error: No such command",
        b"error: unrecognized arguments: x",
        b"RemoteDisconnected: ",
        b"Request failed: 404",
        b"TypeError: a torch.dtype",
        b"Val\x1b[31mueError: ",
        b"\x1b[0m",
        b"\xc3\xa9",
        b"\xff",
        b"\x00",
        b"\r\n",
        b"\r",
        b"\n",
        b"\n",
        b"[rank3]: ",
        b" ",
        b"x" * 5000,
        OOM.encode(),
    ]
    for _ in range(60):
        a, b = rng.choice(lits), rng.choice(lits)
        cut = rng.randrange(1, len(a) + 1)
        both = a[:cut] + b[rng.randrange(0, min(3, len(b))) :]  # one running into the other
        pieces.append(bytes(c ^ 0x20 if rng.random() < 0.3 and chr(c).isalpha() else c for c in both))
    return pieces


@pytest.mark.parametrize("seed", range(12))
def test_tricky_lines_give_what_the_python_scan_gives(tmp_path, seed, phase):
    """Keywords overlapping one another, in any case, around escapes, non-ASCII bytes, NUL bytes,
    CRLF, lines longer than a piece: the same result through either grep as in Python."""
    rng = random.Random(seed)
    pieces = _tricky_pieces(rng)
    data = b"".join(rng.choice(pieces) for _ in range(3000))
    path = tmp_path / "tricky.log"
    path.write_bytes(data)
    _same(path)


def test_a_line_of_more_literals_than_a_piece_has_bytes(tmp_path, phase):
    """A line holding thousands of literals (here 30 KB of them) is matched at its anchors as
    grep's records come, not after all of them are kept: the same result, bounded memory."""
    line = b"[rank1]: " + b"Error: " * 4500 + b"Exception: boom"
    data = line + b"\n" + OOM.encode() + b"\n" + line + b"\r" + line + b"\n"
    path = tmp_path / "long.log"
    path.write_bytes(data)
    _same(path)


@pytest.mark.parametrize("seed", range(6))
def test_the_literal_grep_tells_what_a_line_holds_as_the_python_tries_find_it(tmp_path, seed):
    """From the literals grep finds in a line ignoring case (leftmost-longest), the anchors, the
    keywords and the gates' leads the line holds: exactly those that ``in`` finds in it (case
    matters but for the leads, which a gate compares lowercased)."""
    rng = random.Random(seed)
    pieces = [p for p in _tricky_pieces(rng) if b"\n" not in p and b"\r" not in p]
    lines = [b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 8))) for _ in range(2000)]
    path = tmp_path / "lines.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    lits = _literals()
    exe = prefilter.gnu_grep()
    out = subprocess.run(
        [*prefilter.literal_argv(exe, lits.all), str(path)], capture_output=True, env=prefilter._env()
    )
    found: dict[int, list[tuple[int, bytes]]] = {}
    for rec in out.stdout.splitlines():
        n, off, text = rec.split(b":", 2)
        found.setdefault(int(n), []).append((int(off), text))
    start, checked = 0, 0
    for n, line in enumerate(lines, 1):
        texts = found.get(n, [])
        truth = [k for k in lits.lits[literals.KEYWORD] if k in line]
        if not texts:
            assert not truth and not any(a in line for a in lits.lits[literals.ANCHOR])
        else:
            held = lits.at_all(line, [off - start for off, _ in texts], [t for _, t in texts])
            assert set(held.anchors) == {a for a in lits.lits[literals.ANCHOR] if a in line}
            assert held.keywords == set(truth)
            assert held.leads == {le.decode() for le in lits.lits[literals.LEAD] if le in line.lower()}
            checked += 1
        start += len(line) + 1
    assert checked > 1000


_WORDS = b"adapter batch cache device engine fused gather handle index kernel layer model node".split()
LETTER_FLOODS = {
    **FLOODS,
    "words": lambda i: (
        b"ValueError: cannot %s the %s %s of the %s\n" % tuple(_WORDS[i // 13**k % 13] for k in range(4))
    ),
}


@pytest.mark.parametrize("flood", sorted(LETTER_FLOODS))
def test_a_flood_of_distinct_lines_is_not_read_by_the_python_tries(tmp_path, monkeypatch, flood):
    """Lines that differ in letters (hex ids, words) share no digit shape: each had its keywords
    and its gate's leads found by the Python tries (two ``findall``, ~8 µs a line: 40 s for a
    100 MB flood). Once so many lines of a flood were, the literal grep tells them: the rest of
    the flood costs no trie (a few thousand at most, whatever its length), with the same result."""
    n = 40_000
    lines = [LETTER_FLOODS[flood](i) for i in range(n)]
    data = b"".join(lines[: n // 2] + list(FAILURES.values()) + lines[n // 2 :])
    path = tmp_path / "flood.log"
    path.write_bytes(data)
    looked = [0]
    held = combine.Literals.held

    def counted(self, text):
        if not isinstance(self, scanner.ShapeLiterals):  # a digit shape's guards, not a line's
            looked[0] += 1
        return held(self, text)

    monkeypatch.setattr(combine.Literals, "held", counted)
    grepped = prefilter.scan_grepped(str(path))
    assert grepped is not None
    assert looked[0] <= 2 * prefilter.SWITCH_LINES + 1000, looked[0]  # (without: 64,000, 79,000)
    monkeypatch.undo()
    assert _key(grepped) == _key(_python(path))
    for sid in FAILURES:
        assert [m.line_no for m in grepped.matches if m.signature.id == sid]


@pytest.mark.parametrize("flood", ["numbered", "repeated"])
def test_a_flood_whose_lines_repeat_or_differ_in_digits_keeps_the_anchor_grep(tmp_path, monkeypatch, flood):
    """The literal grep reads every line holding a literal ignoring case (``vllm``, ``nccl``: many
    in a healthy log) and costs grep twice the time: it starts only where lines are decided in
    full one after another, not where they repeat or share their digit shape."""
    n = 40_000
    if flood == "numbered":
        lines = [LETTER_FLOODS[flood](i) for i in range(n)]
    else:
        excerpt = (ROOT / "docs" / "validation" / "grpo-colocate-b4-h100.log").read_bytes()
        lines = [excerpt] * 200
    path = tmp_path / "flood.log"
    path.write_bytes(b"".join(lines))
    started = []
    literal_grep = prefilter.Grepped._literal_grep

    def counted(self, *args):
        started.append(args)
        return literal_grep(self, *args)

    monkeypatch.setattr(prefilter.Grepped, "_literal_grep", counted)
    grepped = prefilter.scan_grepped(str(path))
    assert not started
    assert _key(grepped) == _key(_python(path))
