"""Hostile model configs, hub caches, output targets, compressed logs and package metadata
(issue 30). Each CLI run is a new process under a 1.5 GiB address-space limit and a 60 s
wall-clock guard (a guard, not a timing)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from envdoctor.errors import InputError
from envdoctor.plan.memory.shape import find_config, from_config, load_shape
from envdoctor.triage import decode
from tests.conftest import ROOT, snapshot
from tests.memory.configs import QWEN25_05B

GUARD_S = 60
LIMIT_AS = 1536 * 1024 * 1024
HASH = "0123456789abcdef0123456789abcdef01234567"


def _limits() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_", "HF_"))}
    full.update(NO_COLOR="1", PYTHONPATH=str(ROOT), **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-m", "envdoctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
        timeout=GUARD_S,
        preexec_fn=_limits,
    )
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def facts(tmp_path) -> str:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(snapshot(2)))
    return str(path)


# ---------------------------------------------------------------- model configs, hub cache
def test_every_model_dimension_is_bounded():
    """A 400-digit ``max_position_embeddings`` overflowed the plan's float arithmetic."""
    shape = from_config({**QWEN25_05B, "max_position_embeddings": int("9" * 400)})
    assert shape.max_positions is None
    assert from_config(QWEN25_05B).max_positions == QWEN25_05B["max_position_embeddings"]
    nested: dict = dict(QWEN25_05B)
    for _ in range(5000):  # text_config inside text_config: one level is read, not recursed
        nested = {"model_type": "gemma3", "text_config": nested}
    with pytest.raises(InputError, match="hidden_size"):
        from_config(nested)


def test_plan_memory_on_a_400_digit_dimension_and_a_5000_digit_number(tmp_path, facts):
    model = tmp_path / "model"
    model.mkdir()
    text = json.dumps({**QWEN25_05B, "max_position_embeddings": 1})
    (model / "config.json").write_text(
        text.replace('"max_position_embeddings": 1', '"max_position_embeddings": ' + "9" * 400)
    )
    proc = cli(
        tmp_path,
        "plan-memory",
        "--facts",
        facts,
        "--model",
        str(model),
        "--",
        "torchrun",
        "--nproc_per_node",
        "1",
        "t.py",
    )
    assert proc.returncode in (0, 1), proc.stderr
    (model / "config.json").write_text(text[:-1] + ', "x": ' + "7" * 5000 + "}")
    proc = cli(
        tmp_path,
        "plan-memory",
        "--facts",
        facts,
        "--model",
        str(model),
        "--",
        "torchrun",
        "--nproc_per_node",
        "1",
        "t.py",
    )
    assert proc.returncode == 2 and "config.json" in proc.stderr, proc.stderr
    with pytest.raises(InputError, match="unreadable JSON"):
        load_shape(str(model))


def test_a_huge_hub_ref_is_read_only_in_its_first_bytes(tmp_path):
    """A 2 GiB ``refs/main`` was read whole (21.8 s, 4.1 GiB); a sparse one here, under a
    1.5 GiB address-space limit."""
    repo = tmp_path / "hub" / "models--org--m"
    snap = repo / "snapshots" / HASH
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(QWEN25_05B))
    (repo / "refs").mkdir()
    with open(repo / "refs" / "main", "wb") as fh:
        fh.write(HASH.encode())
        fh.truncate(2 * 1024**3)
    env = {"HF_HUB_CACHE": str(tmp_path / "hub")}
    code = (
        f"from envdoctor.plan.memory.shape import load_shape; "
        f"print(load_shape('org/m', {env!r}).total_params())"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=GUARD_S,
        preexec_fn=_limits,
    )
    assert proc.returncode == 0 and proc.stdout.split() == ["494032768"], proc.stderr[-2000:]
    (repo / "refs" / "main").write_text(f"{HASH}\n")  # a real ref names its snapshot
    other = repo / "snapshots" / ("f" * 40)
    other.mkdir()
    (other / "config.json").write_text(json.dumps(QWEN25_05B))
    assert find_config("org/m", env) == snap / "config.json"
    (repo / "refs" / "main").write_text("../../../../etc")  # not a hash: never a path
    assert find_config("org/m", env) in (snap / "config.json", other / "config.json")


# ---------------------------------------------------------------- -o targets
def test_output_to_a_fifo_nobody_reads_is_refused_at_once(tmp_path, facts):
    """``-o FIFO`` blocked for ever in open(); now a FIFO without a reader is exit 2, one with a
    reader (or /dev/null, /dev/stdout) is written."""
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    for args in (("check", "--facts", facts), ("collect", "--no-gpu")):
        proc = cli(tmp_path, *args, "-o", str(fifo))
        assert proc.returncode == 2 and "nobody reads" in proc.stderr, proc.stderr
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    try:
        proc = cli(tmp_path, "check", "--facts", facts, "-o", str(fifo))
    finally:
        if reader.is_alive():  # unblock the reader if the writer never came
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(GUARD_S)
    assert proc.returncode == 0 and b"envdoctor" in got[0], proc.stderr
    proc = cli(tmp_path, "check", "--facts", facts, "-o", "/dev/null")
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    proc = cli(tmp_path, "check", "--facts", facts, "-o", "/dev/stdout")
    assert proc.returncode == 0 and "envdoctor" in proc.stdout, proc.stderr


# ---------------------------------------------------------------- decompression bombs
LINE = b"step 1 loss 0.1 a log line that repeats\n"
BLOCK = LINE * (1024 * 1024 // len(LINE))


def _decoded(data: bytes) -> int:
    import io

    return sum(len(c) for c in decode.chunks(io.BytesIO(data)))


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz"])
def test_a_compressed_log_may_expand_a_bounded_multiple(kind, monkeypatch):
    """Bombs (gzip members repeated: 40 GB; bzip2: 10 GB; xz: 8 GiB) were decoded up to 64
    GiB; now up to 100 times the compressed bytes read, at least ``MIN_DECODED``."""
    monkeypatch.setattr(decode, "MIN_DECODED", 2 * 1024 * 1024)
    pack = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lambda data: lzma.compress(data, preset=1)}[
        kind
    ]
    member = pack(BLOCK)  # 1 MiB of text, compressed some 1,000 times or more
    with pytest.raises(decode.LogUnreadable, match=f"{kind} data expands more than 100 times"):
        _decoded(member * 64)
    assert _decoded(member) == len(BLOCK)  # under the floor: read whole
    import random

    rng = random.Random(0)
    text = b"".join(b"step %d loss %f\n" % (i, rng.random()) for i in range(120_000))
    assert len(text) > 2 * 1024 * 1024 and _decoded(pack(text)) == len(text)  # a real ratio


def test_a_bomb_is_refused_by_the_cli_naming_the_way_out(tmp_path, facts):
    bomb = tmp_path / "train.log.xz"
    bomb.write_bytes(lzma.compress(BLOCK * 16, preset=1) * 64)  # 1 GiB of text in about 200 KB
    proc = cli(tmp_path, "triage", str(bomb), "--facts", facts)
    assert proc.returncode == 2, proc.stderr
    assert "train.log.xz" in proc.stderr and "xz -dc FILE > log.txt" in proc.stderr


# ---------------------------------------------------------------- package metadata
def test_requires_dist_is_read_up_to_a_cap(tmp_path, monkeypatch):
    """100,000 distinct Requires-Dist lines took over 20 s (a parse each, twice)."""
    from envdoctor.facts import packages

    calls = []
    real = packages.requirement_problem
    monkeypatch.setattr(packages, "requirement_problem", lambda line: calls.append(1) or real(line))
    text = (
        "Metadata-Version: 2.1\nName: trl\nVersion: 1.16.0\n"
        + "".join(f"Requires-Dist: dep{i}>=1.{i}\n" for i in range(100_000))
        + "\nbody\n"
    )
    pkg = packages._parse_metadata(text)
    assert pkg.version == "1.16.0" and len(pkg.requires) == packages.MAX_REQUIRES
    assert len(calls) == packages.MAX_REQUIRES


def test_a_snapshot_with_100k_requires_is_refused_naming_the_key(tmp_path):
    snap = snapshot(2)
    snap["packages"]["trl"]["requires"] = [f"dep{i}>=1.{i}" for i in range(100_000)]
    (tmp_path / "reqs.json").write_text(json.dumps(snap))
    proc = cli(tmp_path, "check", "--facts", "reqs.json")
    assert proc.returncode == 2 and "packages.trl.requires" in proc.stderr, proc.stderr
