"""The catalogue of known failures (``rules/knowledge/known_failures/``) as triage signatures.

Each entry's ``symptoms`` become one signature (``known-<id>``, rule TRI011): a literal symptom is
its own keyword, a regex symptom (``re:``) is keyed by its leading literal; both with their quotes
soft (``knowledge.quotes``: a paste with the quotes gone, typeset or swapped matches, as
``Symptom.found_in`` has it), keyed by what every form shares (the text before a quote, or the
longest run of literal text between quotes). An
exception's message is found on its line through the anchors it holds ("Error", "Exception: ", ":
error: "); a rare literal (``RARE`` characters or more) of an entry whose symptom is a line of its
own (a warning, a stalled step, a silently wrong run's warning: ``OWN_LINE_KINDS``) becomes an
anchor itself; a keyword no anchor covers, or a regex without a literal lead (``(?i)…``), is tried
on the lines that hold ``Error``. Matching stays linear: a regex with a quantifier inside another is
left out (``skipped`` says which), and every pattern is tried on at most the scanner's window of one
line.

The diagnosis (``known_failure``) says the entry's cause and fix, and whether the log's versions
fall in the entry's ``when.packages`` ranges: "the log's versions match", "the log shows no
versions", or — a version outside the range — no diagnosis at all (the first-exception answer).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from envdoctor.findings import Severity
from envdoctor.knowledge.quotes import QUOTE_CLASS, soft_regex
from envdoctor.triage.interface import Signature

RULE = "TRI011"
PREFIX = "known-"
RARE = 12  # characters of a literal that make it an anchor of its own
FALLBACK_KEYWORD = b"Error"
MIN_KEYWORD = 6  # characters of a literal that make it a signature's keyword
_QUOTE_GROUP = f"(?:{QUOTE_CLASS}|"  # what ``soft_regex`` puts for a quote

try:  # the regex parser: re._parser from Python 3.11, sre_parse on 3.10
    import re._constants as _c  # type: ignore[import-not-found]
    import re._parser as _p  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _p

_REPEATS = tuple(getattr(_c, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_c, n))


def _entries() -> list[Any]:
    """The catalogue's entries; none when the catalogue is not there or does not load."""
    try:
        from envdoctor.knowledge import known_failures
    except ImportError:
        return []
    try:
        return list(known_failures())
    except Exception:  # noqa: BLE001 - a broken catalogue must not break triage (check reports it)
        return []


def _leading_literal(pattern: str, parsed: Any = None) -> str:
    """The literal text a regex starts with ('' when it starts otherwise or ignores case);
    ``parsed``: the pattern as ``_p.parse`` reads it, where the caller has it."""
    parsed = _p.parse(pattern) if parsed is None else parsed
    if parsed.state.flags & re.IGNORECASE:
        return ""
    out = []
    items = list(parsed)
    for i, (op, av) in enumerate(items):
        if op != _c.LITERAL:
            break
        if i + 1 < len(items) and items[i + 1][0] in _REPEATS:
            break  # "x?" : the x is optional
        out.append(chr(av))
    return "".join(out)


def _nested(items: Any, depth: int = 0) -> bool:
    """A quantifier inside another (the backtracking that is not linear)."""
    for op, av in items:
        if op in _REPEATS:
            if depth or _nested(av[2], depth + 1):
                return True
            continue
        inner = (
            [av[-1]]
            if op == _c.SUBPATTERN
            else list(av[1])
            if op == _c.BRANCH
            else [av[1]]
            if op in (_c.ASSERT, _c.ASSERT_NOT)
            else []
        )
        if any(_nested(sub, depth) for sub in inner):
            return True
    return False


def _symptom(symptom: Any) -> tuple[str, bytes] | None:
    """``(regex source, keyword)`` of one symptom; None when it cannot be matched linearly. Its
    quotes are soft (``quotes.soft_regex``, as ``Symptom.found_in`` and ``Symptom.regex`` have
    them: a paste from a rendered page lost or changed them); the keyword is a literal every
    match holds, quotes or none (``_keyword``)."""
    regex = symptom.regex
    source = soft_regex(re.escape(symptom.text)) if regex is None else regex.pattern
    if regex is None and source == re.escape(symptom.text):
        return source, symptom.text.encode()  # a literal without quotes: itself
    parsed = _p.parse(source)
    if regex is not None and _nested(list(parsed)):
        return None
    flags = regex.flags if regex is not None else 0
    keyword = _keyword(source, parsed)
    # global flags ("(?i)…") are scoped to the symptom, which becomes one alternative of several
    flag_s = "".join(
        f for f, bit in (("i", re.IGNORECASE), ("m", re.MULTILINE), ("s", re.DOTALL)) if flags & bit
    )
    body = re.sub(r"^\(\?[aiLmsux]{1,6}\)", "", source)
    return (f"(?{flag_s}:{body})" if flag_s else body), keyword


def _keyword(source: str, parsed: Any) -> bytes:
    """The literal a regex starts with (``_leading_literal``) where it is ``MIN_KEYWORD`` long;
    else, where a soft quote cut it short, the longest literal run that every match holds
    (``_runs``); else ``FALLBACK_KEYWORD`` (the line's "Error")."""
    lead = _leading_literal(source, parsed)
    if len(lead) >= MIN_KEYWORD:
        return lead.encode()
    if _QUOTE_GROUP in source and not (parsed.state.flags & re.IGNORECASE):
        runs = [r for r in _runs(list(parsed)) if len(r) >= MIN_KEYWORD]
        if runs:
            return max(runs, key=len).encode()
    return FALLBACK_KEYWORD


def _runs(items: list[Any]) -> list[str]:
    """The runs of literal characters of a parsed regex's top level (each one every match holds;
    a character a quantifier follows ends a run, not joining it)."""
    out, run = [], []
    for i, (op, av) in enumerate(items):
        if op == _c.LITERAL and not (i + 1 < len(items) and items[i + 1][0] in _REPEATS):
            run.append(chr(av))
            continue
        out.append("".join(run))
        run = []
    out.append("".join(run))
    return out


_GROUP = re.compile(r"\(\?P<(\w+)>")


def _unnamed_again(source: str, names: set[str]) -> str:
    """``source`` with each named group whose name an earlier symptom of the entry used made
    plain (one pattern holds all of an entry's symptoms, and a name may stand once in it; each
    symptom's own regex still reads its values: ``triage.usage.values``)."""

    def one(m: re.Match[str]) -> str:
        if m.group(1) in names:
            return "(?:"
        names.add(m.group(1))
        return m.group(0)

    return _GROUP.sub(one, source)


@lru_cache(maxsize=1)
def catalogue() -> tuple[tuple[Signature, ...], tuple[str, ...], dict[str, Any]]:
    """``(signatures, skipped symptoms, entries by signature id)``."""
    sigs, skipped, by_id = [], [], {}
    for entry in _entries():
        parts, keywords = [], []
        names: set[str] = set()
        for s in entry.symptoms:
            got = _symptom(s)
            if got is None:
                skipped.append(f"{entry.id}: {s.text}")
                continue
            parts.append(f"(?:{_unnamed_again(got[0], names)})")
            if got[1] not in keywords:
                keywords.append(got[1])
        if not parts:
            continue
        sid = PREFIX + re.sub(r"[^a-z0-9]+", "-", entry.id.lower()).strip("-")
        sigs.append(
            Signature(
                id=sid,
                rule=RULE,
                summary=entry.title,
                keywords=tuple(keywords),
                pattern=re.compile("|".join(parts)),
                references=tuple(entry.sources),
                severity=Severity.ERROR if entry.certainty == "certain" else Severity.WARNING,
            )
        )
        by_id[sid] = entry
    return tuple(sigs), tuple(skipped), by_id


#: Kinds whose symptoms are log lines of their own (warnings, a stalled step, the one warning a
#: silently wrong run prints), not the message of an exception: a rare literal of theirs becomes an
#: anchor. A crash or a refusal raises, and its line holds "Error", "Exception: " or argparse's
#: ": error: " (anchors already).
OWN_LINE_KINDS = ("hang", "degraded", "silent-wrong")
#: a keyword that is an import statement (a traceback's source line: a failing import)
_IMPORT_LINE = re.compile(rb"^from [\w.]{1,200} import \w")


def extra_anchors(
    anchors: tuple[bytes, ...], sigs: tuple[Signature, ...], entries: dict[str, Any]
) -> tuple[bytes, ...]:
    """The catalogue keywords that become anchors: rare (``RARE`` characters or more), covered by
    no anchor, and either of an entry whose symptoms are lines of their own (its kind, or
    ``own_line``: a device-side assertion, a state dict's list of mismatches) or a source line a
    traceback quotes (``assert …``, ``from X import Y``: the exception line after it does not
    repeat it)."""
    found: list[bytes] = []
    for sig in sigs:
        entry = entries.get(sig.id)
        own_line = entry is not None and (
            getattr(entry, "kind", "") in OWN_LINE_KINDS or getattr(entry, "own_line", False)
        )
        for kw in sig.keywords:
            if any(a in kw for a in (*anchors, *found)) or len(kw) < RARE:
                continue
            if own_line or kw.startswith(b"assert ") or _IMPORT_LINE.match(kw):
                found.append(kw)
    return tuple(found)


def unreachable(anchors: tuple[bytes, ...], sig: Signature) -> tuple[bytes, ...]:
    """Keywords of ``sig`` that no anchor finds (their symptoms are looked for on "Error" lines)."""
    return tuple(kw for kw in sig.keywords if not any(a in kw for a in anchors))
