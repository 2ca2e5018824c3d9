"""The log as people attach it: compressed (gzip, bzip2, xz — told by their magic bytes) or in
UTF-16/UTF-32 (told by the byte-order mark, as PowerShell's redirection writes it), turned into the
UTF-8 byte chunks the scanner reads. What cannot be read (zstd, UTF-16 without a mark that still
looks binary, corrupt archives) raises ``LogUnreadable`` with the reason, never a silent "no known
failure". Streaming throughout: memory stays bounded, time linear in the decoded size, which is
capped at 100 times the compressed size (at least 256 MiB).
"""

from __future__ import annotations

import bz2
import codecs
import lzma
import zlib
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from envdoctor.units import MiB, size_text

CHUNK = 4 * MiB
#: A compressed log may expand to ``MAX_RATIO`` times the compressed bytes read so far, and to
#: ``MIN_DECODED`` whatever its size: its time stays within 100 times that of a plain log of
#: its size (a real log compresses 10-20 times; gzip can reach 1,000, bzip2 and xz far more),
#: and a small bomb is refused after 256 MiB, a few seconds (docs/reliability.md).
MAX_RATIO = 100
MIN_DECODED = 256 * MiB
_UNPACK = {"gzip": "gzip -dc", "bzip2": "bzip2 -dc", "xz": "xz -dc"}
SNIFF = 64 * 1024

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


class LogUnreadable(ValueError):
    """The log's bytes are not a text log envdoctor can read; the message says why."""


def _raw(stream: BinaryIO, first: bytes) -> Iterator[bytes]:
    if first:
        yield first
    while True:
        block = stream.read(CHUNK)
        if not block:
            return
        yield block


def _mib(n: int) -> str:
    return size_text(n, "MiB", 0, step_down=True, grouped=True)


def _slices(blocks: Iterator[bytes], size: int = 64 * 1024) -> Iterator[bytes]:
    """The compressed bytes in small pieces, so that the ratio cap counts what was consumed."""
    for block in blocks:
        for start in range(0, len(block), size):
            yield block[start : start + size]


def _decompressed(blocks: Iterator[bytes], make: Callable[[], Any], what: str) -> Iterator[bytes]:
    d, total, read = make(), 0, 0
    for data in _slices(blocks):
        read += len(data)
        while True:
            if d.eof:
                if not data.strip(b"\x00"):
                    break  # the end of this piece (or zero padding)
                d = make()  # another member follows (gzip -c a b > c), maybe in a later piece
            try:
                out = d.decompress(data, CHUNK)
            except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
                raise LogUnreadable(f"{what} data is corrupt ({exc})") from None
            data = b""
            total += len(out)
            if total > max(MIN_DECODED, MAX_RATIO * read):
                raise LogUnreadable(
                    f"{what} data expands more than {MAX_RATIO} times (over {_mib(total)} from "
                    f"{_mib(read)}): a decompression bomb, or a log too repetitive to scan "
                    f"compressed; decompress it yourself ({_UNPACK[what]} FILE > log.txt) and "
                    "triage the plain file"
                )
            if out:
                yield out
            if d.eof:
                data = d.unused_data
                continue
            if d.needs_input:
                break
    if not d.eof:
        raise LogUnreadable(f"{what} data ends early (a truncated file)")


def _gzip() -> object:
    return zlib.decompressobj(16 + zlib.MAX_WBITS)


class _Gzip:
    """zlib's gzip decompressor with the interface of bz2/lzma's (needs_input, eof)."""

    def __init__(self) -> None:
        self._d = _gzip()
        self._pending = b""

    @property
    def eof(self) -> bool:
        return bool(self._d.eof)  # type: ignore[attr-defined]

    @property
    def unused_data(self) -> bytes:
        return bytes(self._d.unused_data)  # type: ignore[attr-defined]

    @property
    def needs_input(self) -> bool:
        return not self._pending

    def decompress(self, data: bytes, max_length: int) -> bytes:
        out = self._d.decompress(self._pending + data, max_length)  # type: ignore[attr-defined]
        self._pending = self._d.unconsumed_tail  # type: ignore[attr-defined]
        return out


def _transcoded(blocks: Iterator[bytes], encoding: str) -> Iterator[bytes]:
    dec = codecs.getincrementaldecoder(encoding)(errors="replace")
    for block in blocks:
        text = dec.decode(block)
        if text:
            yield text.encode("utf-8", errors="replace")
    tail = dec.decode(b"", final=True)
    if tail:
        yield tail.encode("utf-8", errors="replace")


def _looks_like(sample: bytes, encoding: str) -> bool:
    """A byte-order mark is trusted when what follows reads as that encoding: a log is mostly
    ASCII, so in UTF-16/32 most of its high bytes are zero (bytes that merely begin with FF FE
    are not UTF-16)."""
    width = 4 if "32" in encoding else 2
    sample = sample[: SNIFF - SNIFF % width]
    units = len(sample) // width
    if units < 8:
        return True
    high = slice(width - 1, None, width) if encoding.endswith("le") else slice(0, None, width)
    return sample[high].count(0) >= 0.3 * units


def _bomless_utf16(head: bytes) -> str | None:
    """UTF-16 without a mark: NULs in every other byte of mostly-ASCII text."""
    sample = head[: SNIFF - SNIFF % 2]
    if len(sample) < 4:
        return None
    odd, even = sample[1::2].count(0), sample[0::2].count(0)
    half = len(sample) // 2
    if odd > 0.9 * half and even < 0.1 * half:
        return "utf-16-le"
    if even > 0.9 * half and odd < 0.1 * half:
        return "utf-16-be"
    return None


def _text(blocks: Iterator[bytes], what: str) -> Iterator[bytes]:
    """Tell the encoding of (possibly decompressed) bytes by their start, and yield UTF-8."""
    head = b""
    for block in blocks:
        head += block
        if len(head) >= SNIFF:
            break
    rest = blocks
    for bom, encoding in _BOMS:
        if head.startswith(bom) and _looks_like(head[len(bom) :], encoding):
            yield from _transcoded(_chain(head[len(bom) :], rest), encoding)
            return
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    if head.count(0) > len(head) // 10:
        guess = _bomless_utf16(head)
        if guess is None:
            raise LogUnreadable(f"{what}looks binary (NUL bytes), not a text log")
        yield from _transcoded(_chain(head, rest), guess)
        return
    if _binary(head):
        raise LogUnreadable(f"{what}looks binary (control bytes, not UTF-8 text), not a text log")
    yield from _chain(head, rest)


_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\x1b\x08\x0c") + b"\x7f"


def _binary(head: bytes) -> bool:
    """Much of the start is neither UTF-8 nor printable: the file is not a text log."""
    if len(head) < 64:
        return False
    sample = head[:SNIFF]
    control = len(sample) - len(sample.translate(None, _CONTROL))
    invalid = sample.decode("utf-8", errors="replace").count("\ufffd")
    return control + invalid > 0.3 * len(sample)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def is_plain(head: bytes) -> bool:
    """The start of a file is plain (UTF-8 or ASCII) text: no compression, no BOM, not binary."""
    magic = (
        b"\x1f\x8b",
        b"\xfd7zXZ\x00",
        b"\x28\xb5\x2f\xfd",
        b"PK\x03\x04",
        codecs.BOM_UTF8,
        *(bom for bom, _ in _BOMS),
    )
    if head.startswith(magic) or head.startswith(b"BZh") and head[3:4].isdigit():
        return False
    return head.count(0) <= len(head) // 10 and not _binary(head)


def chunks(stream: BinaryIO) -> Iterator[bytes]:
    """The log's content as UTF-8 byte chunks, whatever of the supported forms it comes in."""
    first = stream.read(CHUNK)
    blocks = _raw(stream, first)
    if first.startswith(b"\x1f\x8b"):
        return _text(_decompressed(blocks, _Gzip, "gzip"), "the gzip-compressed log ")
    if first.startswith(b"BZh") and first[3:4].isdigit():
        return _text(_decompressed(blocks, bz2.BZ2Decompressor, "bzip2"), "the bzip2-compressed log ")
    if first.startswith(b"\xfd7zXZ\x00"):
        return _text(_decompressed(blocks, lzma.LZMADecompressor, "xz"), "the xz-compressed log ")
    if first.startswith(b"\x28\xb5\x2f\xfd"):
        raise LogUnreadable("zstd-compressed: decompress it first (zstd -d FILE)")
    if first.startswith(b"PK\x03\x04"):
        raise LogUnreadable("a zip archive: extract the log first (unzip)")
    return _text(blocks, "")
