"""Reading the catalogue of known failures (``rules/knowledge/known_failures/*.yaml``), once per
process; ``envdoctor.knowledge.failures`` parses and validates it.

``check`` reads only the entries it reports (KNF001). ``python -m envdoctor.resources`` stores
them in rules/compiled.jsonl already parsed and validated, with a stamp of every catalogue file:
while the files are those texts, loading them is one small JSON parse (parsing and validating
the YAML entries cost ~10 ms a run); after an edit, the files are parsed and validated again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from envdoctor.knowledge.failures import (
    CHECKABLE_KEY,
    KnownFailure,
    KnownFailuresError,
    checkable,
    from_record,
    parse_catalogue,
)
from envdoctor.resources import compiled_entry, files_stamp, read_yaml, rules_dir


def catalogue_dir() -> Path:
    return rules_dir() / "knowledge" / "known_failures"


def _files(folder: Path) -> Iterator[tuple[str, Any]]:
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = read_yaml(path)
        except Exception as exc:  # a YAML syntax error: name the file and the line
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}" if mark is not None else ""
            raise KnownFailuresError(f"{path.name}: not valid YAML{at} ({type(exc).__name__})") from None
        yield path.name, data


def load_dir(
    folder: Path, eager: bool = True, keep: Callable[[dict[str, Any]], bool] | None = None
) -> list[KnownFailure]:
    """Every entry of every ``*.yaml`` in ``folder``, ids unique across files."""
    return parse_catalogue(_files(folder), eager, keep)


@lru_cache(maxsize=1)
def load_known_failures() -> tuple[KnownFailure, ...]:
    return tuple(load_dir(catalogue_dir(), eager=False))  # tests compile every symptom


def compiled_checkable(folder: Path) -> tuple[KnownFailure, ...] | None:
    """The checkable entries as rules/compiled.jsonl holds them, when it holds these files'
    texts intact (None otherwise: the YAML is read)."""
    entry = compiled_entry(CHECKABLE_KEY)
    if entry is None:
        return None
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.yaml"))]
    if entry[0] != files_stamp(texts):
        return None
    try:
        records = json.loads(entry[1])
        return tuple(from_record(r) for r in records) if isinstance(records, list) else None
    except (ValueError, TypeError, KeyError, AttributeError):  # not what was written: the YAML
        return None


@lru_cache(maxsize=1)
def load_checkable_failures() -> tuple[KnownFailure, ...]:
    """The entries ``check`` reports (KNF001): no older rule reports them and their trigger shows
    before the run. The others are not parsed here; triage and the tests load and validate
    every entry."""
    folder = catalogue_dir()
    compiled = compiled_checkable(folder)
    if compiled is not None:
        return compiled
    return tuple(load_dir(folder, eager=False, keep=checkable))
