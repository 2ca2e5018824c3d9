"""Failure signatures as data (``rules/triage/signatures.yaml``), validated and compiled once."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from envdoctor.resources import rules_dir

SCHEMA = "envdoctor.signatures/1"
KEYS = {"id", "rule", "keyword", "pattern", "summary", "references"}


class SignatureError(ValueError):
    """rules/triage/signatures.yaml breaks its schema (a bug in envdoctor's data)."""


@dataclass(frozen=True)
class Signature:
    id: str
    rule: str
    keyword: bytes
    pattern: re.Pattern[str]
    summary: str
    references: tuple[str, ...]


def parse(data: Any, source: str = "signatures.yaml") -> list[Signature]:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SignatureError(f"{source}: 'schema: {SCHEMA}' missing")
    out, seen = [], set()
    for i, entry in enumerate(data.get("signatures") or []):
        where = f"{source}: signatures[{i}]"
        if not isinstance(entry, dict) or set(entry) != KEYS:
            raise SignatureError(f"{where}: needs exactly the keys {sorted(KEYS)}")
        if entry["id"] in seen:
            raise SignatureError(f"{where}: duplicate id {entry['id']}")
        seen.add(entry["id"])
        refs = entry["references"]
        if not isinstance(refs, list) or not refs:
            raise SignatureError(f"{where}: references must be a non-empty list")
        try:
            pattern = re.compile(str(entry["pattern"]))
        except re.error as exc:
            raise SignatureError(f"{where}: bad pattern: {exc}") from None
        keyword = str(entry["keyword"])
        if not keyword:
            raise SignatureError(f"{where}: empty keyword")
        out.append(Signature(str(entry["id"]), str(entry["rule"]), keyword.encode(), pattern,
                             str(entry["summary"]), tuple(map(str, refs))))
    if not out:
        raise SignatureError(f"{source}: no signatures")
    return out


@lru_cache(maxsize=1)
def signatures() -> tuple[Signature, ...]:
    path = rules_dir() / "triage" / "signatures.yaml"
    return tuple(parse(yaml.safe_load(path.read_text(encoding="utf-8")), path.name))
