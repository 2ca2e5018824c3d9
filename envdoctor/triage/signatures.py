"""Failure signatures as data (``rules/triage/signatures.yaml``): validated, compiled once.

Schema ``envdoctor.signatures/1``: a top-level ``schema``, the ``anchors`` (literals of the fast
pass) and a ``signatures`` list whose entries have ``id``, ``rule``, ``summary``, ``keywords``,
``pattern`` and ``references``, and optionally ``confirm``, ``severity``, ``fallback``, ``hint``
and ``keep`` (the matches kept).
Anything else is an error that names the entry.

Logs are other people's text, so every pattern must run in linear time: each alternative starts
with a literal (the regex engine then tries it only where that literal stands), every quantifier
has an upper bound, and the bounds of nested quantifiers multiply to at most ``MAX_NESTED``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from envdoctor.findings import Severity
from envdoctor.resources import rules_dir
from envdoctor.triage.interface import Signature

try:  # the regex parser: re._parser from Python 3.11, sre_parse on 3.10 (requires-python)
    import re._constants as _c  # type: ignore[import-not-found]
    import re._parser as _p  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _p

_REPEATS = tuple(
    getattr(_c, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_c, n)
)  # possessive quantifiers: Python 3.11+

SCHEMA = "envdoctor.signatures/1"
REQUIRED = ("id", "rule", "summary", "keywords", "pattern", "references")
OPTIONAL = ("confirm", "severity", "fallback", "hint", "keep")
MAX_REPEAT = 4096  # the largest bound of one quantifier
MAX_NESTED = 65536  # the product of the bounds of quantifiers nested in one another
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
        isinstance(k, str) and _VERSION.match(str(v)) for k, v in below.items()
    ):
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
    items = {
        "package_below": tuple((k, str(v)) for k, v in below.items()),
        "layout": layout,
        "rules": tuple(rules),
    }
    return tuple((k, v) for k, v in items.items() if v)


def _starts_with_literal(items: Any) -> bool:
    """Every way through ``items`` begins with a literal character (or ``^``)."""
    if not len(items):
        return False
    op, av = items[0]
    if op in (_c.LITERAL, _c.AT):
        return True
    if op == _c.SUBPATTERN:
        return _starts_with_literal(av[-1])
    if op == _c.BRANCH:
        return all(_starts_with_literal(branch) for branch in av[1])
    return False


def _repeat_bound(items: Any, outer: int = 1) -> int:
    """The largest product of nested quantifier bounds (``MAXREPEAT`` when one is unbounded)."""
    worst = outer
    for op, av in items:
        if op in _REPEATS:
            low, high, sub = av
            if high == _c.MAXREPEAT or high > MAX_REPEAT:
                return _c.MAXREPEAT
            worst = max(worst, _repeat_bound(sub, outer * max(high, 1)))
        elif op == _c.SUBPATTERN:
            worst = max(worst, _repeat_bound(av[-1], outer))
        elif op == _c.BRANCH:
            worst = max([worst] + [_repeat_bound(b, outer) for b in av[1]])
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            worst = max(worst, _repeat_bound(av[1], outer))
        if worst == _c.MAXREPEAT:
            return worst
    return worst


def check_linear(pattern: str) -> str | None:
    """Why ``pattern`` could take more than linear time on a hostile line, or None."""
    parsed = _p.parse(pattern)
    if not _starts_with_literal(list(parsed)):
        return "every alternative must start with a literal (or ^)"
    bound = _repeat_bound(list(parsed))
    if bound == _c.MAXREPEAT:
        return f"every quantifier needs an upper bound of at most {MAX_REPEAT} (use {{0,N}})"
    if bound > MAX_NESTED:
        return f"nested quantifiers allow {bound} steps, more than {MAX_NESTED}"
    return None


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
    slow = check_linear(str(raw["pattern"]))
    if slow:
        raise SignatureError(f"{where}: pattern is not linear-time: {slow}")
    try:
        severity = Severity(raw.get("severity", "error"))
    except ValueError:
        raise SignatureError(f"{where}: bad severity {raw.get('severity')!r}") from None
    fallback, hint = raw.get("fallback", False), raw.get("hint", False)
    if not isinstance(fallback, bool) or not isinstance(hint, bool):
        raise SignatureError(f"{where}: fallback and hint must be true or false")
    keep = raw.get("keep", 0)
    if not isinstance(keep, int) or isinstance(keep, bool) or not 0 <= keep <= 1000:
        raise SignatureError(f"{where}: keep must be a number of matches from 0 to 1000")
    return Signature(
        id=sid,
        rule=rule,
        summary=str(raw["summary"]).strip(),
        keywords=tuple(k.encode() for k in raw["keywords"]),
        pattern=pattern,
        references=tuple(raw["references"]),
        confirm=_confirm(raw.get("confirm", {}), where, known_rules),
        severity=severity,
        fallback=fallback,
        hint=hint,
        keep=keep,
    )


def parse(
    data: Any, source: str = "signatures.yaml", known_rules: Iterable[str] | None = None
) -> tuple[Signature, ...]:
    """Validate the file's data and compile it; raises ``SignatureError`` naming the entry."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SignatureError(f"{source}: 'schema' must be {SCHEMA!r}")
    extra = set(data) - {"schema", "anchors", "signatures"}
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


def parse_anchors(data: Any, source: str = "signatures.yaml") -> tuple[bytes, ...]:
    """The literals of the fast pass: non-empty strings, longest first."""
    anchors = data.get("anchors") if isinstance(data, dict) else None
    if anchors is None or not _strings(anchors):
        raise SignatureError(f"{source}: 'anchors' must be a non-empty list of literal strings")
    return tuple(sorted({a.encode() for a in anchors}, key=len, reverse=True))


@lru_cache(maxsize=1)
def _data() -> Any:
    from envdoctor.resources import read_yaml

    return read_yaml(rules_dir() / "triage" / "signatures.yaml")


@lru_cache(maxsize=1)
def own_signatures() -> tuple[Signature, ...]:
    """The signatures of ``rules/triage/signatures.yaml``, checked against the documented rules."""
    from envdoctor.rule_docs import rule_docs

    return parse(_data(), "rules/triage/signatures.yaml", known_rules=rule_docs())


@lru_cache(maxsize=1)
def own_anchors() -> tuple[bytes, ...]:
    """The anchors of ``rules/triage/signatures.yaml``."""
    return parse_anchors(_data(), "rules/triage/signatures.yaml")


@lru_cache(maxsize=1)
def _with_catalogue() -> tuple[tuple[Signature, ...], tuple[bytes, ...]]:
    """The shipped signatures and anchors, with the catalogue of known failures: its rare
    keywords become anchors, the others are looked for on lines that hold ``Error``."""
    from dataclasses import replace

    from envdoctor.knowledge.quotes import lead
    from envdoctor.triage import catalogue

    known, _, entries = catalogue.catalogue()
    # an anchor holding a quote is cut before it: a line whose quotes a rendered page ate or
    # changed still reaches the (quote-soft) catalogue signatures (``quotes.lead``)
    base = tuple(dict.fromkeys(lead(a.decode()).encode() or a for a in own_anchors()))
    all_anchors = base + catalogue.extra_anchors(base, known, entries)
    found = []
    for sig in known:
        lost = catalogue.unreachable(all_anchors, sig)
        if lost:
            kept = tuple(k for k in sig.keywords if k not in lost)
            sig = replace(
                sig,
                keywords=kept + (() if catalogue.FALLBACK_KEYWORD in kept else (catalogue.FALLBACK_KEYWORD,)),
            )
        found.append(sig)
    return own_signatures() + tuple(found), tuple(sorted(set(all_anchors), key=len, reverse=True))


def signatures() -> tuple[Signature, ...]:
    """The shipped signatures and those of the known-failure catalogue (``triage/catalogue.py``)."""
    return _with_catalogue()[0]


def anchors() -> tuple[bytes, ...]:
    """The shipped anchors, and the catalogue's rare literals."""
    return _with_catalogue()[1]
