"""Every path that reads a plain log gives the Python scan's answer (issue 37): the anchor grep,
the literal grep and ranges scanned apart, on generated logs of long lines, CRLF, NUL bytes,
non-ASCII text, ANSI colour and redraws: the same lines, counts, ranks, texts and context lines.
Property-based (hypothesis), with a bounded number of examples."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.triage import parallel, prefilter, scanner
from tests.triage.test_triage_prefilter import PIECES, _key

pytestmark = pytest.mark.skipif(prefilter.gnu_grep() is None, reason="needs GNU grep")

_PIECES = st.sampled_from(
    [
        *PIECES,
        b"\x00",
        b"\x00\x00ValueError: nul\x00",
        "Ünïcødé — 日本語 RuntimeError: ошибка".encode(),
        b"\r\n",
        b"\xc3\x28\xa0\xa1",  # bytes that are not UTF-8
        b"\x1b[0m\x1b[1;33mWARNING\x1b[0m ",
        b"Traceback (most recent call last):\n",
    ]
)
_LONG = st.sampled_from([10, 4095, 4097, 8200, 65_535, 65_537, 70_000, 140_000]).map(lambda n: b"a" * n)
_LOGS = st.lists(_PIECES | _LONG, min_size=1, max_size=60).map(b"".join)


def _paths(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    with open(path, "rb") as fh:
        out: dict[str, object] = {"python": _key(scanner.scan(fh))}
    out["anchor grep"] = _key(prefilter.scan_grepped(str(path)))
    with monkeypatch.context() as m:
        m.setattr(prefilter, "SWITCH_LINES", 0)
        m.setattr(prefilter, "SWITCH_BYTES", 1 << 60)
        out["literal grep"] = _key(prefilter.scan_grepped(str(path)))
    with monkeypatch.context() as m:
        m.setattr(parallel, "PARALLEL_MIN", 1)
        for workers in (2, 3):
            merged = _key(parallel.scan_file(str(path), workers, grep=False))
            out[f"{workers} ranges"] = merged
    return out


# derandomized: CI runs the same examples each time (a failure is a change's, not the draw's);
# the case a random draw found on 2026-11-28 is kept below as a known gap
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=_LOGS)
def test_every_path_gives_the_python_scans_answer(data, monkeypatch):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gen.log"
        path.write_bytes(data)
        got = _paths(path, monkeypatch)
    want = got.pop("python")
    for name, key in got.items():
        if "ranges" in name:  # matches (with context), counts, ranks, lines: as the one pass
            assert key[:4] == want[:4], name
        else:
            assert key == want, name


@pytest.mark.xfail(
    strict=True,
    reason="known gap: a matching line longer than the scan's window that starts a range keeps "
    "4096 characters in the range scan, 4148 in the one pass (found by a random draw, not fixed yet)",
)
def test_a_long_matching_line_at_a_range_start_keeps_the_one_pass_text(monkeypatch):
    oom = (
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
        b"capacity of 79.10 GiB of which 1.06 GiB is free."
    )
    bar = b"Capturing CUDA graphs (FULL):  50%|"
    data = bar + b"a" * 4095 + b"\n" + bar + oom + b"a" * 4095
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gen.log"
        path.write_bytes(data)
        with open(path, "rb") as fh:
            want = _key(scanner.scan(fh))
        monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
        got = _key(parallel.scan_file(str(path), 3, grep=False))
    assert got[:4] == want[:4]
