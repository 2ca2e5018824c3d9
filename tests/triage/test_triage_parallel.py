"""A big log scanned by several processes gives what one pass gives."""

from __future__ import annotations

import pytest

from envdoctor.triage import parallel, scanner
from envdoctor.triage.decode import is_plain
from tests.triage.test_triage_scanner import OOM, messy_log


def _key(result):
    return (
        [(m.signature.id, m.line_no, m.text, m.rank, m.context) for m in result.matches],
        result.counts,
        result.ranks,
        result.lines,
        result.bytes_read,
        result.last_line,
    )


@pytest.mark.parametrize("workers", [2, 3, 5])
@pytest.mark.parametrize("tail", [b"", b"no newline at the end"])
def test_parallel_ranges_merge_into_the_single_pass_result(tmp_path, monkeypatch, workers, tail):
    data, _ = messy_log()
    data = data * 7 + b"\n\n" + (OOM.encode() + b"\n") * 60 + data + tail  # > KEEP matches
    _same_as_one_pass(tmp_path / "big.log", data, workers, monkeypatch)


def _same_as_one_pass(path, data: bytes, workers: int, monkeypatch):
    """Scan ``data`` in one pass and in ``workers`` ranges: the same result; the one pass."""
    path.write_bytes(data)
    with open(path, "rb") as fh:
        single = scanner.scan(fh)
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    merged = parallel.scan_file(str(path), workers, grep=False)
    assert _key(merged)[1:] == _key(single)[1:]
    assert [k[:4] for k in _key(merged)[0]] == [k[:4] for k in _key(single)[0]]
    assert len(merged.matches) == len(single.matches)
    return single


def test_small_files_and_one_cpu_are_scanned_in_one_pass(tmp_path):
    path = tmp_path / "small.log"
    path.write_bytes(OOM.encode() + b"\n")
    assert parallel.scan_file(str(path)).counts["cuda-oom"] == 1
    assert parallel.scan_file(str(path), 1).lines == 1
    assert parallel.workers() >= 1


@pytest.mark.parametrize(
    "head, plain",
    [
        (b"INFO hello\n", True),
        (b"\x1f\x8b\x08", False),
        (b"\xff\xfeI\x00", False),
        (b"\xef\xbb\xbfINFO", False),
        (b"BZh91AY", False),
        (bytes(range(256)) * 4, False),
    ],
)
def test_only_plain_text_is_split(head, plain):
    assert is_plain(head) is plain


@pytest.mark.parametrize("workers", [2, 3])
def test_first_only_hints_merge_as_one_pass_takes_them(tmp_path, monkeypatch, workers):
    # vLLM's engine-start lines in every range: one pass keeps the first and stops counting
    data, _ = messy_log()
    engine = b"Capturing CUDA graphs (FULL): 10%|\n[rank1]: Capturing CUDA graphs (FULL): 20%|\n"
    data = (engine + data) * 9 + (OOM.encode() + b"\n") * 3
    single = _same_as_one_pass(tmp_path / "engine.log", data, workers, monkeypatch)
    assert single.counts["vllm-in-process"] == 1 and not single.ranks.get("vllm-in-process")
