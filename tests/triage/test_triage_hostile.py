"""Logs written to hurt (issue 19, items 3 and 7): bounded work on any line, and logs as people
attach them (compressed, UTF-16) read — or refused with a reason, never "no known failure".

The slow-input cases run the real command in a subprocess with a generous timeout: a pattern that
backtracks would take minutes (it took 24 s to over 60 s before), a linear scan takes seconds.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import subprocess
import sys

import pytest

from envdoctor.triage.decode import LogUnreadable, chunks
from tests.conftest import ROOT, snapshot
from tests.triage.helpers import scan_bytes

OOM = (
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
    "has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n"
)
DP = (
    "ValueError: GRPOTrainer does not support `nn.DataParallel`, which `Trainer` uses when "
    "several GPUs are visible to a single process.\n"
)
GENEROUS = 300  # seconds: not a timing assertion, only a guard against a hang


@pytest.fixture
def facts(write_json):
    return str(write_json(snapshot(2, packages={})))


def _triage(path, facts: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "envdoctor",
            "triage",
            str(path),
            "--facts",
            facts,
            "--format",
            "json",
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=GENEROUS,
    )


@pytest.mark.parametrize("n", [1000, 2000])
def test_a_line_of_vllm_before_undefined_symbol(tmp_path, facts, n):
    log = tmp_path / "abi.log"
    log.write_text(
        "vllm" * n + ": undefined symbol: \n" + "vllm" * n + ".so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi\n"
    )
    proc = _triage(log, facts)
    assert proc.returncode == 1 and '"TRI005"' in proc.stdout, proc.stderr


def test_long_lines_before_a_dataparallel_message(tmp_path, facts):
    log = tmp_path / "dp.log"
    log.write_text(("a" * 8000 + "\n") * 100 + "a" * 8000 + " " + DP)
    proc = _triage(log, facts)
    assert proc.returncode == 1 and '"LAY003"' in proc.stdout, proc.stderr


def test_one_16_mb_line_of_error_prefixes(tmp_path, facts):
    log = tmp_path / "one-line.log"
    log.write_bytes(b"Error: " * (16 * 1024 * 1024 // 7))
    proc = _triage(log, facts)
    assert proc.returncode == 0 and '"TRI003"' in proc.stdout, proc.stderr


def test_a_100_mb_log_of_value_errors(tmp_path, facts):
    log = tmp_path / "flood.log"
    line = b"ValueError: invalid literal for int() with base 10: 'abc'\n"
    with open(log, "wb") as fh:
        fh.write(line * (100 * 1024 * 1024 // len(line)) + OOM.encode())
    proc = _triage(log, facts)
    assert proc.returncode == 1 and '"TRI001"' in proc.stdout, proc.stderr


def test_a_line_full_of_every_anchor_is_looked_at_once():
    from envdoctor.triage.signatures import anchors

    line = b"".join(anchors()) * 2000 + b"\n"
    result = scan_bytes(line * 3 + OOM.encode())
    assert result.lines == 4 and result.counts.get("cuda-oom") == 1


# -- logs as people attach them -------------------------------------------------------------------


def _decoded(data: bytes) -> bytes:
    return b"".join(chunks(io.BytesIO(data)))


TEXT = ("tqdm 10%|█ 1/10\r" + OOM + "naïve ünïcode ✓\n").encode()


@pytest.mark.parametrize(
    "encode",
    [
        lambda b: b,
        gzip.compress,
        lambda b: gzip.compress(b[:40]) + gzip.compress(b[40:]),  # two members (gzip -c a b)
        bz2.compress,
        lzma.compress,
        lambda b: codecs.BOM_UTF8 + b,
    ],
    ids=["plain", "gzip", "gzip-members", "bzip2", "xz", "utf-8-bom"],
)
def test_compressed_logs_are_decompressed(encode):
    assert _decoded(encode(TEXT)).removeprefix(codecs.BOM_UTF8) == TEXT


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_logs_are_transcoded(encoding):
    data = TEXT.decode().encode(encoding)
    if encoding.endswith(("le", "be")):
        bom = codecs.BOM_UTF16_LE if encoding.endswith("le") else codecs.BOM_UTF16_BE
        with_bom = bom + data
        assert _decoded(with_bom) == TEXT
        assert _decoded(data * 40) == TEXT * 40  # no BOM: told by the NULs of ASCII text
    else:
        assert _decoded(data) == TEXT


def test_gzip_of_a_utf16_log():
    assert _decoded(gzip.compress(TEXT.decode().encode("utf-16"))) == TEXT


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"\x28\xb5\x2f\xfd" + b"\x00" * 100, "zstd"),
        (b"PK\x03\x04" + b"\x00" * 100, "zip"),
        (gzip.compress(TEXT)[:-12], "ends early"),
        (b"\x1f\x8b\x08\x00" + b"\xff" * 200, "corrupt"),
        (bytes(range(256)) * 64, "binary"),
        (b"\x00\x01\x02\x03" * 5000, "binary"),
    ],
)
def test_unreadable_logs_say_why(data, reason):
    with pytest.raises(LogUnreadable, match=reason):
        _decoded(data)


def test_the_cli_reads_gzip_and_utf16_and_refuses_binary(tmp_path, facts):
    gz, u16, junk = tmp_path / "train.log.gz", tmp_path / "ps.log", tmp_path / "blob.log"
    gz.write_bytes(gzip.compress(TEXT))
    u16.write_bytes(TEXT.decode().encode("utf-16"))
    junk.write_bytes(bytes(range(256)) * 64)
    for path in (gz, u16):
        proc = _triage(path, facts)
        assert proc.returncode == 1 and '"TRI001"' in proc.stdout, proc.stderr
    proc = _triage(junk, facts)
    assert proc.returncode == 2 and "could not be read" in proc.stderr
    assert "no known failure" not in proc.stdout + proc.stderr
    piped = subprocess.run(
        [sys.executable, "-m", "envdoctor", "triage", "-", "--facts", facts],
        input=gzip.compress(TEXT),
        capture_output=True,
        cwd=ROOT,
        timeout=GENEROUS,
    )
    assert piped.returncode == 1, piped.stderr


@pytest.mark.parametrize(
    "line, rule",
    [
        ("ValueError: generation_batch_size (12) must be divisible by num_generations (0).", "CFG003"),
        (
            "ValueError: The global train batch size (2 x 4) must be evenly divisible by the number of "
            "generations per prompt (0).",
            "CFG003",
        ),
        (
            "ValueError: The global train batch size (99999999999999999999 x 4) must be evenly "
            "divisible by the number of generations per prompt (3).",
            "CFG002",
        ),
        ("ValueError: generation_batch_size (999999999) must be divisible by num_generations (7).", "CFG002"),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.2.3 GiB. GPU 0 has a total "
            "capacity of 1.2.3 GiB of which 0 bytes is free.",
            "TRI001",
        ),
        (
            "ValueError: Free memory on device cuda:0 (1.2.3/2.2 GiB) on startup is less than desired "
            "GPU memory utilization (0.9, 1.98 GiB)",
            "MEM001",
        ),
    ],
)
def test_odd_numbers_in_a_line_neither_crash_nor_hang(line, rule):
    from tests.triage.helpers import findings

    (f,) = findings(scan_bytes(line + "\n"))
    assert f.rule == rule and f.fix
