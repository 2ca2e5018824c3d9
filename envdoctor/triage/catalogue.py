"""The catalogue of known failures (``rules/knowledge/known_failures/``) as triage signatures.

Each entry's ``symptoms`` become one signature (``known-<id>``, rule TRI011): a literal symptom is
its own keyword (one with backticks matches with or without them, as ``Symptom.found_in`` does,
keyed by its text before the first); a regex symptom (``re:``) is keyed by its leading literal. An
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
from envdoctor.triage.interface import Signature

RULE = "TRI011"
PREFIX = "known-"
RARE = 12  # characters of a literal that make it an anchor of its own
FALLBACK_KEYWORD = b"Error"

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


def _leading_literal(pattern: str) -> str:
    """The literal text a regex starts with ('' when it starts otherwise or ignores case)."""
    parsed = _p.parse(pattern)
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
    """``(regex source, keyword)`` of one symptom; None when it cannot be matched linearly. A
    literal with backticks matches with or without them (a paste from a rendered page)."""
    text = symptom.text
    if symptom.regex is None:
        if "`" not in text:
            return re.escape(text), text.encode()
        # as Symptom.found_in: the text or the text without its backticks (two literals, so that
        # the scanner's literal prefilter keeps it); keyed by what both share, the text before one
        lead = text[: text.index("`")]
        bare = re.escape(text.replace("`", ""))
        return f"{re.escape(text)}|{bare}", (lead.encode() if len(lead) >= 6 else FALLBACK_KEYWORD)
    regex = symptom.regex
    source = regex.pattern
    if _nested(list(_p.parse(source))):
        return None
    lead = _leading_literal(source)
    # global flags ("(?i)…") are scoped to the symptom, which becomes one alternative of several
    flags = "".join(
        f for f, bit in (("i", re.IGNORECASE), ("m", re.MULTILINE), ("s", re.DOTALL)) if regex.flags & bit
    )
    body = re.sub(r"^\(\?[aiLmsux]{1,6}\)", "", source)
    return (f"(?{flags}:{body})" if flags else body), (lead.encode() if len(lead) >= 6 else FALLBACK_KEYWORD)


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


def extra_anchors(
    anchors: tuple[bytes, ...], sigs: tuple[Signature, ...], entries: dict[str, Any]
) -> tuple[bytes, ...]:
    """The catalogue keywords that become anchors: rare (``RARE`` characters or more), covered by
    no anchor, and either of an entry whose symptoms are lines of their own (its kind, or
    ``own_line``: a device-side assertion, a state dict's list of mismatches) or a source line a
    traceback quotes (``assert …``, which the exception line after it does not repeat)."""
    found: list[bytes] = []
    for sig in sigs:
        entry = entries.get(sig.id)
        own_line = entry is not None and (
            getattr(entry, "kind", "") in OWN_LINE_KINDS or getattr(entry, "own_line", False)
        )
        for kw in sig.keywords:
            if any(a in kw for a in (*anchors, *found)) or len(kw) < RARE:
                continue
            if own_line or kw.startswith(b"assert "):
                found.append(kw)
    return tuple(found)


def unreachable(anchors: tuple[bytes, ...], sig: Signature) -> tuple[bytes, ...]:
    """Keywords of ``sig`` that no anchor finds (their symptoms are looked for on "Error" lines)."""
    return tuple(kw for kw in sig.keywords if not any(a in kw for a in anchors))
