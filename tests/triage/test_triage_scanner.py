"""The streaming scanner: messy multi-rank logs, chunk boundaries, bounded memory, any bytes."""

from __future__ import annotations

import functools
import io
import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.findings import Severity
from envdoctor.triage import scanner
from envdoctor.triage.combine import EAGER, Gate, Literals, digit_guards
from envdoctor.triage.scanner import scan, split_prefix
from envdoctor.triage.signatures import anchors, signatures
from tests.triage.helpers import findings, scan_bytes

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
    "capacity of 79.10 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
    "process has 78.02 GiB memory in use. Of the allocated memory 76.10 GiB is allocated by "
    "PyTorch, and 313.00 MiB is reserved by PyTorch but unallocated."
)
TIMEOUT = (
    "[rank{r}]:[E1101 10:35:02.{r}1 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLGATHER, NumelIn=4, "
    "NumelOut=16, Timeout(ms)=1800000) ran for 1800042 milliseconds before timing out."
)
RED, GREEN, RESET = "\x1b[31m", "\x1b[1;32m", "\x1b[0m"


def messy_log() -> tuple[bytes, int]:
    """Four ranks of a GRPO run: colours, tqdm redraws, vLLM logs, interleaved tracebacks; rank 2
    runs out of memory, the others then time out in NCCL. Returns the log and the OOM's line."""
    lines = [f"{GREEN}INFO{RESET} 11-01 10:00:00 [model_runner.py:1115] Loading weights took 0.9 GB"]
    for step in range(30):
        bar = "".join(
            f"\r {p:3d}%|{'█' * (p // 10):<10}| {p}/100 [00:{p % 60:02d}<00:10]" for p in range(0, 101, 25)
        )
        lines.append(f"Generating{bar}")
        lines.append(f"{{'loss': 0.0{step}, 'reward': 0.{step}, 'kl': 0.00{step}, 'step': {step}}}")
    for r in range(4):
        lines.append(f"[rank{r}]: Traceback (most recent call last):")
    for r in (0, 2, 1, 3, 2):
        lines.append(
            f'[rank{r}]:   File "/venv/lib/python3.11/site-packages/trl/trainer/'
            f'grpo_trainer.py", line 1201, in compute_loss'
        )
    oom_line = len(lines) + 1
    lines.append(f"{RED}[rank2]: {OOM}{RESET}")
    lines += [TIMEOUT.format(r=r) for r in (0, 1, 3)]
    lines.append(
        "E1101 10:35:05.000 torch/distributed/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: 1) local_rank: 2 (pid: 4242)"
    )
    return ("\r\n".join(lines) + "\r\n").encode(), oom_line


def test_messy_multi_rank_log():
    data, oom_line = messy_log()
    result = scan_bytes(data)
    oom = next(m for m in result.matches if m.signature.id == "cuda-oom")
    assert oom.line_no == oom_line and oom.rank == 2
    assert "\x1b" not in oom.text and oom.text.startswith("[rank2]: torch.OutOfMemoryError")
    assert all(split_prefix(c)[1] in (None, 2) for c in oom.context)
    assert any("compute_loss" in c for c in oom.context)
    assert result.counts["nccl-timeout"] == 3 and result.ranks["nccl-timeout"] == {0, 1, 3}
    assert result.lines == data.count(b"\n")
    first, second = findings(result)
    assert (first.rule, first.severity) == ("TRI001", Severity.ERROR)
    assert first.evidence["cause"] == "capacity" and "rank 2" in first.message
    assert (second.rule, second.severity) == ("TRI002", Severity.WARNING)
    assert f"consequence of TRI001 at line {oom_line}, rank 2" in second.message
    assert "ranks 0, 1, 3, 3 times" in second.message


@pytest.mark.parametrize("chunk", [7, 64, 1000, 4096])
def test_results_do_not_depend_on_chunk_boundaries(monkeypatch, chunk):
    data, _ = messy_log()
    whole = scan_bytes(data)
    monkeypatch.setattr(scanner, "CHUNK", chunk)
    parts = scan_bytes(data)
    assert [(m.signature.id, m.line_no, m.text, m.rank) for m in parts.matches] == [
        (m.signature.id, m.line_no, m.text, m.rank) for m in whole.matches
    ]
    assert (parts.lines, parts.bytes_read, parts.counts) == (whole.lines, whole.bytes_read, whole.counts)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=4000), max_size=12))
def test_any_split_into_chunks_gives_the_same_matches(cuts):
    data, _ = messy_log()
    points = sorted({min(c, len(data)) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    expected = scan_bytes(data)
    got = scan(iter(pieces))
    assert [(m.signature.id, m.line_no) for m in got.matches] == [
        (m.signature.id, m.line_no) for m in expected.matches
    ]
    assert got.lines == expected.lines


@pytest.mark.parametrize(
    "line, rank",
    [
        ("[rank3]: X", 3),
        ("[Rank 3] X", 3),
        ("[default3]:X", 3),
        ("rank 3: X", 3),
        ("Rank3: X", 3),
        ("[1,3]<stderr>:X", 3),
        ("3: [rank3]: X", 3),
        ("[rank3]:[E1218 20:27:21.433 ProcessGroupNCCL.cpp:629] X", 3),
        ("[E1218 20:27:21.433 ProcessGroupNCCL.cpp:629] [PG ID 0 PG GUID 0(default_pg) Rank 3] X", 3),
        ("(EngineCore_DP0 pid=7) ERROR 01-26 09:25:37 [core.py:935] X", None),
        ("(VllmWorker rank=1 pid=99) X", None),
        ("X", None),
    ],
)
def test_rank_prefixes(line, rank):
    body, found = split_prefix(line)
    assert found == rank
    assert body.endswith("X") and not body.startswith(("[rank", "(E", "(V", "3:"))


def test_tqdm_redraw_on_the_error_line_and_crlf():
    text = (
        "loading\r\n"
        "Generating:  50%|█████     | 5/10\r[rank1]: ValueError: generation_batch_size (12) "
        "must be divisible by num_generations (8).\r\n"
    )
    (m, *_) = scan_bytes(text).matches
    assert (m.line_no, m.rank) == (2, 1) and m.text.startswith("[rank1]: ValueError")


def test_a_line_without_newline_longer_than_the_limit(monkeypatch):
    monkeypatch.setattr(scanner, "CHUNK", 1000)
    monkeypatch.setattr(scanner, "MAX_LINE", 5000)
    data = b"." * 20_000 + b" " + OOM.encode() + b" " + b"." * 3000
    result = scan_bytes(data)
    (m,) = result.matches
    assert m.signature.id == "cuda-oom" and len(m.text) < 2 * scanner.WINDOW
    assert result.lines == 1 and result.bytes_read == len(data)
    tqdm = b"\rprogress 1%" * 20_000 + b"\r[rank0]: " + OOM.encode() + b"\rprogress" * 500
    assert scan_bytes(tqdm).counts["cuda-oom"] == 1


def test_memory_is_bounded_for_a_log_full_of_failures():
    line = f"[rank1]: {OOM}\n".encode()
    result = scan_bytes(line * 5000)
    kept = [m for m in result.matches if m.signature.id == "cuda-oom"]
    assert result.counts["cuda-oom"] == 5000 and len(kept) == scanner.KEEP_PER_SIGNATURE
    assert sum(bool(m.context) for m in kept) == scanner.CONTEXT_PER_SIGNATURE - 1  # not the 1st
    assert all(len(m.context) <= scanner.CONTEXT_LINES for m in kept)
    (f,) = findings(result)
    assert "5000 times" in f.message


@pytest.mark.parametrize(
    "data, lines",
    [(b"", 0), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"a\r", 1), (b"\n\n", 2), (b"a\r\nb\r\n", 2)],
)
def test_line_count(data, lines):
    assert scan_bytes(data).lines == lines


def test_invalid_utf8_is_replaced_not_fatal():
    data = b"\xff\xfe\x00 garbage \xc3\x28\n[rank0]: \xe2\x82 " + OOM.encode() + b" \xff\n"
    (m,) = [m for m in scan_bytes(data).matches if m.signature.id == "cuda-oom"]
    assert m.line_no == 2 and "\ufffd" in m.text


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_the_scanner_never_raises_on_arbitrary_bytes(data):
    result = scan(io.BytesIO(data))
    assert result.bytes_read == len(data) and result.lines <= data.count(b"\n") + 1
    findings(result)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=500), st.binary(max_size=500))
def test_a_failure_line_is_found_whatever_surrounds_it(before, after):
    data = before + b"\n[rank0]: " + OOM.encode() + b"\n" + after
    assert "cuda-oom" in scan(io.BytesIO(data)).counts


def test_a_hint_found_only_through_its_own_anchors_is_looked_for_until_it_matched():
    # vLLM's engine-start lines recur in every colocated run's log: after the first one they are
    # neither decoded nor counted, and lines of other signatures are still found
    lines = [b"Capturing CUDA graphs (PIECEWISE): %d%%|" % i for i in range(2000)]
    lines.insert(1500, b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    res = scan(io.BytesIO(b"\n".join(lines) + b"\n"))
    assert res.counts["vllm-in-process"] == 1 and res.counts["cuda-oom"] == 1
    hits = [m for m in res.matches if m.signature.id == "vllm-in-process"]
    assert [m.line_no for m in hits] == [1]
    oom = [m for m in res.matches if m.signature.id == "cuda-oom"]
    assert [m.line_no for m in oom] == [1501]


def test_digit_guards_are_the_literals_leading_the_alternatives_that_tell_digits_apart():
    def guards(pattern: str) -> tuple[bytes, ...] | None:
        return digit_guards(re.compile(pattern))

    assert guards(r"Tried to allocate (?P<x>\d{1,9}) MiB") == ()  # blind: every digit alike
    assert guards(r"rank \w{1,8} failed [0-9]") == ()
    assert guards(r"Request failed: 404") == (b"Request failed: 404",)
    assert guards(r"^(?P<e>\w+Error)$|(?P<a>EZ9999.{0,300}|ERR99999.{0,300})") == (b"ERR99999", b"EZ9999")
    assert guards(r"exit code [1-9]") == (b"exit code ",)
    assert guards(r"(a)\1") == (b"a",)  # a backreference: only where its lead stands
    assert guards(r"[1-9] failed") == (b" failed",)  # no literal leads it: one every match holds
    assert guards(r"[1-9]+") is None  # none at all
    assert guards(r"(?i:code 7)") is None


def test_a_flood_of_numbered_error_lines_keeps_the_first_exception_and_the_real_failure():
    """100 MB of distinct numbered error lines took minutes (a quadratic dataclass comparison per
    line, then every signature searched on every line); the result must not change: every line
    that differs from a missed one in digit values only is a miss for the same signatures."""
    flood = b"".join(
        b"ValueError: distinct failure number %d at step %d\n" % (i, i * 7 % 1000) for i in range(20000)
    )
    tail = (
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        b"total capacity of 79.19 GiB of which 1.06 GiB is free.\n"
    )
    result = scan_bytes(flood + tail)
    ids = {m.signature.id for m in result.matches}
    assert any("oom" in i for i in ids), ids
    counts = result.counts
    assert max(counts.values()) >= 20000  # every numbered line still counted


FLOODS = {  # lines that differ in their numbers, or in letters too (hex ids, words): every one new
    "numbered": lambda i: (
        b"ValueError: distinct failure number %d at step %d token %d\n" % (i, i * 7 % 1000, i * 31 % 97)
    ),
    "hex ids": lambda i: b"ValueError: distinct failure number %d token %08x\n" % (i, i * 2654435761 % 2**32),
    "ranks and words": lambda i: (
        b"[rank%d]: RuntimeError: request %s-%s failed at %d\n"
        % (i % 8, (b"alpha", b"beta", b"gamma")[i % 3], (b"kappa", b"delta")[i * 7 % 2], i)
    ),
}
REAL = {  # a real failure (signature, line) as a flood may hide it
    "cuda-oom": b"[rank2]: " + OOM.encode() + b"\n",
    "known-liger-grpo-loss-unknown-loss-type-dapo": b"ValueError: Unknown loss type: dapo\n",
    "vllm-server-not-trl": b"requests.exceptions.HTTPError: Request failed: 404, "
    b"Not Found for url: http://0.0.0.0:8000/get_world_size/\n",
}


@pytest.mark.parametrize("flood", sorted(FLOODS))
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_real_failure_inside_a_flood_of_distinct_lines_is_found_wherever_it_stands(flood, where):
    """The per-line shortcuts of a flood (digit shapes, gates, kept signatures counted by keyword)
    never hide a real failure: each one is found on its line, before, inside or after 6,000 lines."""
    n = 6000
    lines = [FLOODS[flood](i) for i in range(n)]
    at = {"start": 0, "middle": n // 2, "end": n}[where]
    failures = list(REAL.values())
    data = b"".join(lines[:at] + failures + lines[at:])
    result = scan_bytes(data)
    for k, sid in enumerate(REAL):
        found = [m.line_no for m in result.matches if m.signature.id == sid]
        assert found == [at + k + 1], (sid, found)
    assert result.counts["unrecognized-exception"] >= n  # every flood line counted
    if flood == "ranks and words":
        assert result.ranks["unrecognized-exception"] >= set(range(8))


def _searches(flood, sigs: tuple) -> tuple[int, dict[str, int]]:
    """Regex calls made on lines 3,001-6,000 of ``flood`` (once the first matches are kept)."""
    m = scanner.Matcher(sigs, anchors())
    first = b"".join(flood(i) for i in range(3000))
    then = b"".join(flood(i) for i in range(3000, 6000))
    m.block(first, 0, len(first))
    before = m.searches
    m.block(then, 0, len(then))
    return m.searches - before, m.result.counts


@pytest.mark.parametrize("flood", sorted(FLOODS))
def test_a_flood_costs_a_few_searches_a_line_however_many_signatures_its_lines_name(flood):
    """A line holding "Error" names ~35 signatures, each catalogue entry one more; they were searched
    one by one (1.5 million lines: a minute). Now lines that differ in digit values only share one
    outcome, and any other is decided by a few regex calls, not one per signature: 100 more
    catalogue-like signatures on "Error" lines add no search per line that matches none of them
    (at most one each for a gate's first lines, ``combine.EAGER``, or a new digit shape)."""
    base, counts = _searches(FLOODS[flood], signatures())
    extra = tuple(
        replace(
            signatures()[0],
            id=f"extra-{i}",
            keywords=(b"Error",),
            pattern=re.compile(rf"never seen symptom {i}|(?i:other symptom) \d+"),
        )
        for i in range(100)
    )
    more, more_counts = _searches(FLOODS[flood], signatures() + extra)
    assert more_counts == counts
    assert more <= base + 2 * len(extra)  # 3,000 lines: 300,000 searches if they cost one a line
    assert base <= (0.2 if flood == "numbered" else 4) * 3000, base


@pytest.mark.parametrize("flood", sorted(FLOODS))
def test_a_flood_puts_the_digit_guards_of_its_signatures_together_once_not_per_line(flood):
    """A line whose digit shape came back unions the digit guards of the ~130 signatures its
    keywords name (a set union per signature): done per line, a fifth of a hex flood's cost.
    Now once per plan (keywords held, as things stand): lines 3,001-6,000 add none, and the
    outcome is the same."""
    m = scanner.Matcher(signatures(), anchors())
    first = b"".join(FLOODS[flood](i) for i in range(3000))
    then = b"".join(FLOODS[flood](i) for i in range(3000, 6000))
    m.block(first, 0, len(first))
    unions = m.guard_unions
    m.block(then, 0, len(then))
    assert m.guard_unions == unions <= 4
    assert m.result.counts["unrecognized-exception"] == 6000


def test_lines_of_one_digit_shape_are_told_apart_where_a_signature_reads_digits():
    """Digit shapes share an outcome only where no signature tells the digits apart: a 404 among
    500s, an Ascend code (EZ9999) among others, also when an ANSI escape joins it in the cleaned
    line (``E\\x1b[0mZ9999``), are still found."""
    lines = [b"Error: Request failed: %d\n" % (500 + i % 7) for i in range(300)]
    lines += [b"Error: E\x1b[0mZ%04d in the device\n" % (1000 + i) for i in range(300)]
    lines += [b"Error: RuntimeError: EZ%04d\n" % (1000 + i) for i in range(300)]
    data = b"".join(
        lines[:100]
        + [b"Error: Request failed: 404\n"]
        + lines[100:400]
        + [b"Error: E\x1b[0mZ9999 in the device\n"]
        + lines[400:800]
        + [b"Error: RuntimeError: EZ9999\n"]
        + lines[800:]
    )
    result = scan_bytes(data)
    where: dict[str, list[int]] = {}
    for m in result.matches:
        where.setdefault(m.signature.id, []).append(m.line_no)
    assert where["vllm-server-not-trl"] == [101]
    assert where["failure-line"] == [402, 803]


@settings(deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "Error",
                ": ",
                "Exception",
                "x",
                " ",
                "No module named ",
                "Conn",
                "ection ",
                "EZ9999",
                "ERR",
                "ab",
                "cd",
                "e",
                "r",
                "é",
            ]
        ),
        max_size=12,
    )
)
def test_literals_held_are_exactly_those_in_the_text(parts):
    words = [
        "Error",
        "Error: ",
        "rror",
        "Exception: ",
        ": error: ",
        "No module named ",
        "EZ9999",
        "ERR99999",
        "Connection ",
        "r: e",
        "ab",
        "abc",
        "bcd",
        "é",
    ]
    text = "".join(parts)
    for looks in (0, EAGER):  # one literal at a time, then the trie
        found = Literals(words)
        found.looks = looks
        assert found.held(text) == {w for w in words if w in text}
        found_bytes = Literals([w.encode() for w in words])
        found_bytes.looks = looks
        assert found_bytes.held(text.encode()) == {w.encode() for w in words if w.encode() in text.encode()}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "ValueError: ",
                "Unknown loss type: dapo",
                "GATHER",
                "gather",
                "Address Already in use",
                "No module named ",
                "vllm",
                " not available on windows",
                "Request failed: 404",
                "TypeError: ",
                " torch.dtype",
                "VLLM_ALLOW_INSECURE_SERIALIZATION",
                " has no attribute '",
                "AttributeError: '",
                "ſ",
                "K",
                "x",
                " ",
                "EZ9999",
            ]
        ),
        max_size=10,
    )
)
def test_a_gate_says_a_line_matches_exactly_when_one_of_its_patterns_does(parts):
    text = "".join(parts)
    patterns = [sig.pattern for sig in signatures()]
    assert _gate(tuple(patterns)).hit(text) == any(p.search(text) for p in patterns)


@functools.lru_cache(maxsize=1)
def _gate(patterns: tuple) -> Gate:
    gate = Gate(patterns)
    gate.looks = EAGER  # built at the next line: leads, anchors, the trie
    return gate


def _split_prefix_by_regex(text: str) -> tuple[str, int | None]:
    """``split_prefix`` as it was: the prefix regex tried on every text."""
    rank = None
    for _ in range(6):
        m = (scanner.PREFIX if "%|" in text else scanner._PREFIX_NO_BAR).match(text)
        if not m or not m.group(0):
            break
        if rank is None:
            digits = next((g for g in m.groups() if g is not None), None)
            rank = int(digits) if digits is not None else None
        text = text[m.end() :]
    if rank is None:
        inner = scanner.INNER_RANK.search(text) if "Rank " in text else None
        rank = int(inner.group(1)) if inner else None
    return text, rank


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "[rank3]:",
                "[default0]:",
                "rank 1:",
                "Rank 2:",
                "[1,3]<stdout>:",
                "12: ",
                "\u0663: ",  # an Arabic-Indic digit: \\d for srun's label
                "(EngineCore_DP0 pid=7) ",
                "ERROR 11-01 10:00:00 [core.py:12] ",
                "vllm-1  | ",
                "[E1218 20:27:21.433 ProcessGroupNCCL.cpp:629] ",
                "> ",
                " 50%|#####| 5/10 [00:01<00:01, 2.00it/s] ",
                "\u2003",  # an em space: white space to \\s and to str.strip
                "\t",
                "ValueError: x",
                "[PG 0 Rank 3] ",
                "|",
                "a",
                "9",
            ]
        ),
        max_size=8,
    )
)
def test_split_prefix_skips_its_regex_only_where_no_prefix_can_start(parts):
    """Without "|" (docker compose's separator, a tqdm bar's) a prefix starts with one of a few
    characters after white space, or a decimal digit: elsewhere the regex is not tried, and the
    result is the same."""
    text = "".join(parts)
    assert split_prefix(text) == _split_prefix_by_regex(text)


def test_every_match_of_a_signature_holds_one_of_the_literals_its_gate_looks_for():
    """``combine.gate_literals``: a pattern is searched only where a line holds one of these (or
    at the start where it is anchored there); on every line of the test logs and excerpts, a
    match holds one."""
    from pathlib import Path

    import yaml

    from envdoctor.triage.combine import gate_literals

    root = Path(__file__).resolve().parent
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted((root / "logs").glob("*.log"))]
    texts += [
        yaml.safe_load(p.read_text(encoding="utf-8"))["log"] for p in sorted((root / "real").glob("*.yaml"))
    ]
    bodies = {split_prefix(scanner.clean(line.encode()))[0] for text in texts for line in text.splitlines()}
    checked = 0
    for sig in signatures():
        found = gate_literals(sig.pattern)
        if found is None:
            continue
        literals, anchored = found
        for body in bodies:
            if body.isascii() and sig.pattern.search(body):
                low = body.lower()
                assert any(lit in low for lit in literals) or anchored and sig.pattern.match(body), (
                    sig.id,
                    body,
                )
                checked += 1
    assert checked > 100
