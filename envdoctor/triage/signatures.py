"""Failure signatures as data (``rules/triage/signatures.yaml``): validated, compiled once.

Schema ``envdoctor.signatures/1``: a top-level ``schema`` and a ``signatures`` list whose entries
have ``id``, ``rule``, ``summary``, ``keywords``, ``pattern`` and ``references``, and optionally
``confirm``, ``severity`` and ``fallback``. Anything else is an error that names the entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import yaml

from envdoctor.findings import Severity
from envdoctor.resources import rules_dir
from envdoctor.triage.interface import Signature

SCHEMA = "envdoctor.signatures/1"
REQUIRED = ("id", "rule", "summary", "keywords", "pattern", "references")
OPTIONAL = ("confirm", "severity", "fallback")
#: The confirm vocabulary (envdoctor/triage/confirm.py gives each key its meaning).
CONFIRM_KEYS = ("package_below", "layout", "rules")
LAYOUT_PREDICATES = ("dataparallel", "generation_shared", "no_generation_gpu")
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_RULE = re.compile(r"^[A-Z]{3}\d{3}$")
_VERSION = re.compile(r"^\d+(?:\.\d+)*$")


class SignatureError(ValueError):
    """The signature data breaks its schema (a bug in envdoctor's data, not the user's input)."""


def _strings(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(x, str) and x for x in value)


def _confirm(value: Any, where: str, known_rules: set[str] | None) -> tuple[tuple[str, Any], ...]:
    if not isinstance(value, dict):
        raise SignatureError(f"{where}: confirm must be a mapping of {list(CONFIRM_KEYS)}")
    unknown = set(value) - set(CONFIRM_KEYS)
    if unknown:
        raise SignatureError(f"{where}: unknown confirm keys {sorted(unknown)}")
    below = value.get("package_below", {})
    if not isinstance(below, dict) or not all(
            isinstance(k, str) and _VERSION.match(str(v)) for k, v in below.items()):
        raise SignatureError(f"{where}: confirm.package_below must map a package to a version")
    layout = value.get("layout")
    if layout is not None and layout not in LAYOUT_PREDICATES:
        raise SignatureError(f"{where}: confirm.layout must be one of {list(LAYOUT_PREDICATES)}")
    rules = value.get("rules", [])
    if rules and not _strings(rules) or not all(_RULE.match(r) for r in rules):
        raise SignatureError(f"{where}: confirm.rules must be a list of rule ids")
    missing = [r for r in rules if known_rules is not None and r not in known_rules]
    if missing:
        raise SignatureError(f"{where}: confirm.rules names undocumented rules {missing}")
    items = {"package_below": tuple((k, str(v)) for k, v in below.items()), "layout": layout,
             "rules": tuple(rules)}
    return tuple((k, v) for k, v in items.items() if v)


def _entry(raw: Any, where: str, known_rules: set[str] | None) -> Signature:
    if not isinstance(raw, dict):
        raise SignatureError(f"{where}: expected a mapping")
    missing = [k for k in REQUIRED if raw.get(k) in (None, "", [])]
    if missing:
        raise SignatureError(f"{where}: missing {', '.join(missing)}")
    extra = set(raw) - set(REQUIRED) - set(OPTIONAL)
    if extra:
        raise SignatureError(f"{where}: unknown keys {sorted(extra)}")
    sid = str(raw["id"])
    where = f"{where} ({sid})"
    if not _ID.match(sid):
        raise SignatureError(f"{where}: id must be lowercase words joined by '-'")
    rule = str(raw["rule"])
    if not _RULE.match(rule) or known_rules is not None and rule not in known_rules:
        raise SignatureError(f"{where}: rule {rule!r} is not a documented rule id")
    if not _strings(raw["keywords"]):
        raise SignatureError(f"{where}: keywords must be a list of non-empty strings")
    if not _strings(raw["references"]):
        raise SignatureError(f"{where}: references must be a list of non-empty strings")
    try:
        pattern = re.compile(str(raw["pattern"]))
    except re.error as exc:
        raise SignatureError(f"{where}: bad pattern: {exc}") from None
    try:
        severity = Severity(raw.get("severity", "error"))
    except ValueError:
        raise SignatureError(f"{where}: bad severity {raw.get('severity')!r}") from None
    fallback = raw.get("fallback", False)
    if not isinstance(fallback, bool):
        raise SignatureError(f"{where}: fallback must be true or false")
    return Signature(
        id=sid, rule=rule, summary=str(raw["summary"]).strip(),
        keywords=tuple(k.encode() for k in raw["keywords"]), pattern=pattern,
        references=tuple(raw["references"]),
        confirm=_confirm(raw.get("confirm", {}), where, known_rules),
        severity=severity, fallback=fallback)


def parse(data: Any, source: str = "signatures.yaml",
          known_rules: Iterable[str] | None = None) -> tuple[Signature, ...]:
    """Validate the file's data and compile it; raises ``SignatureError`` naming the entry."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SignatureError(f"{source}: 'schema' must be {SCHEMA!r}")
    extra = set(data) - {"schema", "signatures"}
    if extra:
        raise SignatureError(f"{source}: unknown top-level keys {sorted(extra)}")
    entries = data.get("signatures")
    if not isinstance(entries, list) or not entries:
        raise SignatureError(f"{source}: 'signatures' must be a non-empty list")
    rules = set(known_rules) if known_rules is not None else None
    sigs = tuple(_entry(raw, f"{source}: signatures[{i}]", rules) for i, raw in enumerate(entries))
    seen: set[str] = set()
    for s in sigs:
        if s.id in seen:
            raise SignatureError(f"{source}: signature id {s.id!r} appears twice")
        seen.add(s.id)
    return sigs


@lru_cache(maxsize=1)
def signatures() -> tuple[Signature, ...]:
    """The shipped signatures, checked against the documented rule ids."""
    from envdoctor.checks.docs import rule_docs

    path = rules_dir() / "triage" / "signatures.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return parse(data, f"rules/triage/{path.name}", known_rules=rule_docs())
