"""Where the data under the top-level ``rules/`` folder lives (in the wheel or the checkout)."""

from __future__ import annotations

import contextlib
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

#: The source repository: pyproject's [project.urls] and the README's links use the same base
#: (tests/test_packaging.py keeps them equal). No git remote named one; this is the README's
#: names: the distribution `grpo-envdoctor` as owner, the command `envdoctor` as repository.
REPOSITORY = "https://github.com/grpo-envdoctor/envdoctor"
#: Files of the repository that a wheel does not ship as such (docs/, rules/, examples/).
_REPO_PATH = re.compile(r"^(?:docs|rules|examples|tests|scripts|bench)/[^\s]*")


def repo_url(reference: str) -> str:
    """A reference as a wheel user can open it: a repository path (``docs/memory.md#s10``,
    ``rules/knowledge/vllm.yaml (note)``) becomes its URL in the repository; URLs and other
    text are returned as they are."""
    m = _REPO_PATH.match(reference)
    if m is None:
        return reference
    return f"{REPOSITORY}/blob/main/{m.group(0)}{reference[m.end() :]}"


@lru_cache(maxsize=1)
def rules_dir() -> Path:
    """``envdoctor/_rules`` inside an installed wheel, else the checkout's ``rules/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("envdoctor's rules/ data folder is missing from this installation")


#: The data files of ``rules/`` already parsed, as JSON: one line per YAML file, ``path<TAB>stamp
#: <TAB>json``, written by ``python -m envdoctor.resources`` (tests/test_static_check_imports.py keeps
#: it fresh). JSON parses ~80 times faster than YAML and PyYAML is then not imported: ~50 ms of
#: a static check's ~200 ms. The stamp is ``<the YAML text's stamp>/<the JSON text's stamp>``: a
#: YAML file whose text no longer matches is parsed, and so is one whose entry is not the JSON
#: that was written (a cut line, an edit). The cache is only ever a speed-up: one that is not a
#: regular file of at most ``MAX_COMPILED_BYTES``, not UTF-8, or whose entry does not parse is
#: passed over and the YAML read (tests/hostile/test_hostile_compiled.py).
COMPILED = "compiled.jsonl"
#: The most the cache is read of (it is ~0.5 MB): a larger file is passed over.
MAX_COMPILED_BYTES = 16 * 1024 * 1024


def read_yaml(path: Path) -> Any:
    """A shipped YAML file, parsed safely (with libyaml when PyYAML has it: several times faster);
    from ``COMPILED`` when it holds this very text, intact."""
    text = path.read_text(encoding="utf-8")
    entry = compiled_entry(_rules_key(path))
    if entry is not None and entry[0] == _stamp(text):
        import json

        try:
            return json.loads(entry[1])
        except ValueError:
            pass  # checksums agree on data that does not parse: the YAML decides
    return _parse_yaml(text)


def _parse_yaml(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506


def _stamp(text: str) -> str:
    """What tells one text from another: its length and two checksums."""
    import zlib

    data = text.encode("utf-8")
    return f"{len(data)}-{zlib.crc32(data):08x}-{zlib.adler32(data):08x}"


def _rules_key(path: Path) -> str | None:
    """``path`` relative to the rules folder (``knowledge/vllm.yaml``), or None outside it.
    A path built from ``rules_dir()`` is read as text (resolving each costs ~0.2 ms)."""
    text, root, sep = str(path), str(rules_dir()), os.sep
    if text.startswith(root + sep) and f"{sep}..{sep}" not in text and f"{sep}.{sep}" not in text:
        return text[len(root) + 1 :].replace(sep, "/")
    try:
        return path.resolve().relative_to(rules_dir()).as_posix()
    except (ValueError, OSError):
        return None


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else None
    (a FIFO is opened without waiting for a writer; a device or link to one is not read)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


@lru_cache(maxsize=1)
def _compiled() -> dict[str | None, tuple[str, str]]:
    """``COMPILED``'s entries: rules-relative path -> (stamp, JSON text); {} without a readable
    file (missing, not a regular file, too large, not UTF-8)."""
    data = _read_bounded(rules_dir() / COMPILED, MAX_COMPILED_BYTES)
    if data is None:
        return {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {}
    out: dict[str | None, tuple[str, str]] = {}
    for line in text.split("\n"):
        parts = line.split("\t", 2)
        if len(parts) == 3:
            out[parts[0]] = (parts[1], parts[2])
    return out


def entry_intact(stamp: str, data: str) -> bool:
    """Whether ``data`` is the JSON text the entry's ``stamp`` was written for."""
    return stamp.rpartition("/")[2] == _stamp(data)


def compiled_entry(key: str | None) -> tuple[str, str] | None:
    """``(stamp of the source text(s), JSON text)`` of a line of ``COMPILED`` whose JSON is intact
    (a YAML file's data, or derived data such as the checkable known failures), or None."""
    entry = _compiled().get(key)
    if entry is None or not entry_intact(*entry):
        return None
    return entry[0].rpartition("/")[0], entry[1]


def files_stamp(texts: list[tuple[str, str]]) -> str:
    """The stamp of several files' names and texts (data derived from them all)."""
    return _stamp("\0".join(f"{name}\0{text}" for name, text in texts))


def _checkable_line(root: Path) -> str:
    """``COMPILED``'s line of the checkable known failures: parsed and validated (a broken
    catalogue fails here, naming the file and entry), with the stamp of every file."""
    import json

    from envdoctor.knowledge.failures import CHECKABLE_KEY, checkable, parse_catalogue, to_record

    paths = sorted((root / "knowledge" / "known_failures").glob("*.yaml"))
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in paths]
    failures = parse_catalogue(((name, _parse_yaml(text)) for name, text in texts), keep=checkable)
    encoded = json.dumps([to_record(f) for f in failures], ensure_ascii=True, separators=(",", ":"))
    return _line(CHECKABLE_KEY, files_stamp(texts), encoded)


def _line(key: str, source_stamp: str, encoded: str) -> str:
    """A line of ``COMPILED``: its stamp covers the source text(s) and the JSON written."""
    return f"{key}\t{source_stamp}/{_stamp(encoded)}\t{encoded}"


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (``1 == 1.0 == True`` for ``==``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(
            _same(k, k2) and _same(a[k], b[k2]) for k, k2 in zip(a, b, strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)  # NaN


def compile_rules(root: Path | None = None) -> str:
    """``COMPILED``'s text for the YAML files under ``root`` (the rules folder): each file that
    JSON holds exactly (a file with dates or non-string keys is left to YAML), then the checkable
    known failures, parsed."""
    import json

    root = root or rules_dir()
    lines = []
    for path in sorted(root.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        data = _parse_yaml(text)
        encoded = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
        if _same(json.loads(encoded), data):
            lines.append(_line(path.relative_to(root).as_posix(), _stamp(text), encoded))
    lines.append(_checkable_line(root))
    return "\n".join(lines) + "\n"


def write_compiled(root: Path | None = None) -> Path:
    """Write ``COMPILED`` for the rules folder ``root``: a temporary file beside it, then renamed
    over it, so that a reader (a check running meanwhile) sees the old file or the new one."""
    import tempfile

    root = root or rules_dir()
    target = root / COMPILED
    text = compile_rules(root)
    fd, tmp = tempfile.mkstemp(prefix=f".{COMPILED}.", dir=root)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


if __name__ == "__main__":  # python -m envdoctor.resources: write rules/compiled.jsonl
    print(f"wrote {write_compiled()}")
