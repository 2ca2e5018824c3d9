"""A hostile rules/compiled.jsonl (issue 37): cut, not UTF-8, a FIFO, a link to /dev/zero, an
entry edited with its stamp kept. Any cache that is not a regular file of bounded size whose
entries match their checksums is passed over and the YAML read: the same report as with a
good cache. Each run is the real CLI on a copy of the package and its rules/ in tmp_path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor import resources
from tests.conftest import MODERN, ROOT, snapshot
from tests.hostile.test_hostile_inputs import GUARD_S, _limits


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of the package and rules/ (the cache is damaged there, never in the checkout)."""
    root = tmp_path_factory.mktemp("pkg")
    shutil.copytree(ROOT / "envdoctor", root / "envdoctor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", root / "rules")
    snap = snapshot(2, packages={**MODERN, "trl": "0.25.0", "vllm": "0.12.0"})  # KNF001 fires
    (root / "s.json").write_text(json.dumps(snap))
    (root / "c.yaml").write_text("use_vllm: true\n")
    return root


def _check(tree: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_", "HF_"))}
    env.update(NO_COLOR="1", PYTHONPATH=str(tree))
    proc = subprocess.run(
        [sys.executable, "-m", "envdoctor", "check", "--facts", "s.json", "--config", "c.yaml"],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
        timeout=GUARD_S,
        preexec_fn=_limits,
    )
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert "failed internally" not in proc.stdout, proc.stdout
    return proc


@pytest.fixture(scope="module")
def good(tree) -> str:
    proc = _check(tree)
    assert proc.returncode == 1 and "KNF001" in proc.stdout, proc.stdout
    return proc.stdout


def _cut_mid_line(text: str) -> str:
    lines = text.split("\n")
    middle = len(lines) // 2
    return "\n".join(lines[:middle] + [lines[middle][: len(lines[middle]) // 2]])


def _last_line_cut(text: str) -> str:
    return text[: len(text) - 200]


def _emptied_entry(text: str) -> str:
    lines = text.rstrip("\n").split("\n")
    key, stamp, _ = lines[-1].split("\t", 2)  # the checkable known failures, stamp kept
    return "\n".join(lines[:-1] + [f"{key}\t{stamp}\t{{}}"]) + "\n"


def _emptied_rules(text: str) -> str:
    out = []
    for line in text.rstrip("\n").split("\n"):
        key, stamp, _ = line.split("\t", 2)
        out.append(f"{key}\t{stamp}\t{{}}")  # every file's data gone, every stamp kept
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    "damage",
    [_cut_mid_line, _last_line_cut, _emptied_entry, _emptied_rules],
    ids=["cut-mid-line", "last-line-cut", "entry-edited-to-{}", "every-entry-{}"],
)
def test_a_damaged_cache_gives_the_report_of_the_yaml(tree, good, damage):
    cache = tree / "rules" / resources.COMPILED
    original = cache.read_text(encoding="utf-8")
    try:
        cache.write_text(damage(original), encoding="utf-8")
        assert _check(tree).stdout == good
    finally:
        cache.write_text(original, encoding="utf-8")


def test_a_non_utf8_byte_in_the_cache(tree, good):
    cache = tree / "rules" / resources.COMPILED
    original = cache.read_bytes()
    try:
        cache.write_bytes(original[:1000] + b"\xff" + original[1001:])
        assert _check(tree).stdout == good
    finally:
        cache.write_bytes(original)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_a_cache_that_is_no_regular_file_of_bounded_size(tree, good, kind):
    cache = tree / "rules" / resources.COMPILED
    keep = tree / "kept.jsonl"
    shutil.move(cache, keep)
    try:
        if kind == "fifo":
            os.mkfifo(cache)  # nobody writes: reading it would wait for ever
        elif kind == "dev-zero":
            cache.symlink_to("/dev/zero")  # reading it would never end
        else:
            with open(cache, "wb") as fh:  # sparse: past the cap, never read
                fh.write(keep.read_bytes())
                fh.truncate(resources.MAX_COMPILED_BYTES + 1)
        assert _check(tree).stdout == good
    finally:
        cache.unlink()
        shutil.move(keep, cache)


def test_the_cache_is_written_atomically(tmp_path):
    """``python -m envdoctor.resources`` writes a temporary file and renames it: a reader sees
    the old file or the new one, never a half-written one; nothing else is left behind."""
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    target = rules / resources.COMPILED
    target.write_text("old\n")
    old_inode = target.stat().st_ino
    resources.write_compiled(rules)
    assert target.read_text(encoding="utf-8") == resources.compile_rules(rules)
    assert target.stat().st_ino != old_inode  # a new file renamed over, not rewritten in place
    assert sorted(p.name for p in rules.iterdir() if p.name.startswith(".")) == []


def test_every_entry_carries_a_checksum_of_its_content():
    text = (resources.rules_dir() / resources.COMPILED).read_text(encoding="utf-8")
    for line in text.rstrip("\n").split("\n"):
        key, stamp, data = line.split("\t", 2)
        assert resources.entry_intact(stamp, data), key
        assert not resources.entry_intact(stamp, "{}"), key
        assert not resources.entry_intact(stamp, data[:-1]), key
