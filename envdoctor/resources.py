"""Where the data under the top-level ``rules/`` folder lives (in the wheel or the checkout)."""

from __future__ import annotations

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
#: a static check's ~200 ms. A YAML file whose text no longer matches its stamp is parsed.
COMPILED = "compiled.jsonl"


def read_yaml(path: Path) -> Any:
    """A shipped YAML file, parsed safely (with libyaml when PyYAML has it: several times faster);
    from ``COMPILED`` when it holds this very text."""
    text = path.read_text(encoding="utf-8")
    entry = _compiled().get(_rules_key(path))
    if entry is not None and entry[0] == _stamp(text):
        import json

        return json.loads(entry[1])
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


@lru_cache(maxsize=1)
def _compiled() -> dict[str | None, tuple[str, str]]:
    """``COMPILED``'s entries: rules-relative path -> (stamp, JSON text); {} without the file."""
    try:
        text = (rules_dir() / COMPILED).read_text(encoding="utf-8")
    except OSError:
        return {}
    out: dict[str | None, tuple[str, str]] = {}
    for line in text.split("\n"):
        parts = line.split("\t", 2)
        if len(parts) == 3:
            out[parts[0]] = (parts[1], parts[2])
    return out


def compiled_entry(key: str) -> tuple[str, str] | None:
    """``(stamp, JSON text)`` of a line of ``COMPILED`` that holds derived data (the checkable
    known failures), or None."""
    return _compiled().get(key)


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
    return f"{CHECKABLE_KEY}\t{files_stamp(texts)}\t{encoded}"


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
            lines.append(f"{path.relative_to(root).as_posix()}\t{_stamp(text)}\t{encoded}")
    lines.append(_checkable_line(root))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m envdoctor.resources: write rules/compiled.jsonl
    target = rules_dir() / COMPILED
    target.write_text(compile_rules(), encoding="utf-8")
    print(f"wrote {target}")
