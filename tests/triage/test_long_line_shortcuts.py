"""The block scan's shortcuts for huge lines (issue 37: a 1 GiB line of one line took 12-17 s of
CPU, 35 ``bytes.find`` passes a block): the rest of a cut line that has matched is not searched,
and in a big block an anchor with a byte the block lacks is not looked for. Both change no
result: each log here is scanned with them and without them, in chunks of several sizes."""

from __future__ import annotations

import random

import pytest

from envdoctor.triage import scanner
from envdoctor.triage.signatures import anchors

OOM = (
    b"[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
    b"has a total capacity of 79.10 GiB of which 1.06 GiB is free."
)
MiB = 1024 * 1024


def _lines() -> dict[str, bytes]:
    rng = random.Random(7)
    printable = bytes(rng.randrange(32, 127) for _ in range(64 * 1024))
    every = b" ".join(anchors())
    return {
        "error prefixes": b"Error: " * (3 * MiB // 7),
        "an OOM repeated on one line": (OOM + b" ") * (3 * MiB // len(OOM)),
        "words without an anchor": b"step loss reward kl grad_norm token " * (3 * MiB // 36),
        "printable noise, every anchor at the end": printable * 40 + every,
        "base64-like, an OOM past the first blocks": bytes(
            rng.choice(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
            for _ in range(64 * 1024)
        )
        * 30
        + b" "
        + OOM,
        "anchors cut by redraws": (b"x" * 5000 + b"\r" + every) * 200,
    }


def _scan(data: bytes, chunk: int) -> tuple:
    result = scanner.scan(data[i : i + chunk] for i in range(0, len(data), chunk))
    return (
        result.lines,
        dict(result.counts),
        dict(result.last_line),
        {k: sorted(v) for k, v in result.ranks.items()},
        [(m.signature.id, m.line_no, m.text, m.groups, m.rank, m.context) for m in result.matches],
    )


@pytest.mark.parametrize("name", sorted(_lines()))
@pytest.mark.parametrize("chunk", [300 * 1024, 1024 * 1024 + 17, 4 * MiB])
def test_the_shortcuts_change_no_result(name, chunk, monkeypatch):
    line = _lines()[name]
    data = b"INFO start\n" + line + b"\nafter\n" + line + b"\n" + OOM + b"\n"
    fast = _scan(data, chunk)
    monkeypatch.setattr(scanner, "_PRESENT_MIN", 1 << 62)
    monkeypatch.setattr(scanner.Matcher, "_rest_of_a_matched_line", lambda *a: False)
    assert fast == _scan(data, chunk)


def test_a_matched_huge_line_is_not_searched_again_and_absent_bytes_skip_anchors(monkeypatch):
    searched: list[int] = []
    present = scanner.Matcher._present

    def count(self, buf, lo, end):
        found = present(self, buf, lo, end)
        searched.append(len(found))
        return found

    monkeypatch.setattr(scanner.Matcher, "_present", count)
    line = (OOM + b" ") * (16 * MiB // len(OOM))
    result = scanner.scan(line[i : i + 2 * MiB] for i in range(0, len(line), 2 * MiB))
    assert result.counts.get("cuda-oom")
    assert len(searched) <= 2  # not one search a block: the line matched in its first
    searched.clear()
    words = b"step loss reward kl grad_norm token " * (4 * MiB // 36)
    scanner.scan(words[i : i + MiB] for i in range(0, len(words), MiB))
    # the big blocks (not the last, short one): most anchors hold a byte they lack
    assert searched and min(searched) < len(anchors()) // 4
