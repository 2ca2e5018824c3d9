"""Exception messages broken by whitespace, matched as their words read.

A log pasted from a terminal or a web page keeps a line wrap inside an exception's message as a
run of spaces (``must be evenly divisible                    by the number of generations``) or as
a newline (the message goes on on the next line; or starts there, after an exception's name alone
on its line: ``ImportError:`` then ``cannot import name 'X'`` then ``from m``). The scan matches
the signatures' literals on the line as it is, so such a message matches no signature but the
first-exception fallback. Here each exception line the scan found only through the fallback is
read again: the message with the lines that continue it (in a log that fits in its head),
NFKC-normalised with every whitespace run one space (``scanner.squeeze``), matched against the
signatures (the shipped ones, TRL's own known messages and the catalogue's symptoms). Bounded:
at most ``MAX_LINES`` exception lines, each with at most ``MAX_MORE`` lines after it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from envdoctor.triage.interface import Match, Signature
from envdoctor.triage.scanner import clean, split_prefix, squeeze

MAX_LINES = 20
MAX_MORE = 4
_RUN = re.compile(r"\S\s{3,}\S")  # a run of blanks between two words: a wrap turned to spaces
#: an exception's name alone with its colon: its message is on the lines after it
_NAME_ONLY = re.compile(r"^[A-Z][\w.]{0,200}?(?:Error|Exception):$")
_ENDED = (".", "!", "?", ")", "]", "'", '"', "`", ":")
_STOP = re.compile(
    r"^(?:File \"|Traceback|During handling|The above exception|INFO|WARNING|ERROR|DEBUG|\[?\d{4}-\d\d-\d\d"
    r"|[IWE]\d{4} |[\w.]{1,100}(?:Error|Exception)(?::|$))"
)


def _body(text: str) -> str:
    """A line without the prefix a logger, a launcher or a quote put before it (``> RuntimeError:``)."""
    return split_prefix(text)[0].strip()


def _following(lines: list[str], line_no: int) -> list[str]:
    """The lines after line ``line_no`` that continue its message: up to a blank line, a frame,
    another exception, a logger's line."""
    out: list[str] = []
    for raw in lines[line_no : line_no + MAX_MORE]:
        body = split_prefix(clean(raw[:4096].encode()))[0].strip()
        if not body or _STOP.match(body):
            break
        out.append(body)
    return out


#: an exception's name and message quoted inside a sentence ("Fixes ImportError: cannot import
#: name 'X' from"), not at the line's start (the scan reads those), its message not ended there
_QUOTED = re.compile(r"\S\s+(?:[a-z_][\w.]{0,100}\.)?[A-Z]\w{0,60}(?:Error|Exception): \S")


def _quoted_wrapped(head: bytes, taken: set[int]) -> list[Match]:
    """Lines of the head that quote an exception inside a sentence and break its message over the
    next line (a message in an issue's or a commit's prose, wrapped): read as the scan's
    fallback lines are (bounded: the first ``MAX_LINES`` such lines)."""
    if b"Error: " not in head and b"Exception: " not in head:
        return []
    from envdoctor.triage.signatures import signatures

    fallback = next((s for s in signatures() if s.id == "unrecognized-exception"), None)
    if fallback is None:
        return []
    out: list[Match] = []
    for no, raw in enumerate(head.split(b"\n"), start=1):
        if no in taken or (b"Error: " not in raw and b"Exception: " not in raw):
            continue
        text = _body(clean(raw[:4096]))
        if text.endswith(_ENDED) or not _QUOTED.search(text):
            continue
        out.append(Match(fallback, no, text, {}, None))
        if len(out) >= MAX_LINES:
            break
    return out


def rematch(matches: Sequence[Match], head: bytes) -> list[Match]:
    """The matches the fallback's exception lines make once their whitespace is squeezed
    (module docstring): new matches, on the same lines."""
    from envdoctor.triage.signatures import signatures

    judged = {m.line_no for m in matches if not m.signature.fallback and not m.signature.hint}
    tried = [
        m
        for m in matches
        if m.line_no not in judged
        and (
            m.signature.id == "unrecognized-exception"
            or m.signature.id == "failure-line"
            and _NAME_ONLY.match(_body(m.text))
        )
    ]
    quoted = _quoted_wrapped(head, judged | {m.line_no for m in tried}) if head else []
    if not tried and not quoted:
        return []
    lines: list[str] | None = None  # the head's lines, split once a message needs them
    sigs: list[Signature] | None = None
    out: list[Match] = []
    for m in [*tried, *quoted][:MAX_LINES]:
        more: list[str] = []
        name_only = _NAME_ONLY.match(_body(m.text)) is not None
        if head and (name_only or not m.text.rstrip().endswith(_ENDED)):
            if lines is None:
                lines = head.decode("utf-8", errors="replace").split("\n")
            more = _following(lines, m.line_no)
        if not more and not _RUN.search(m.text):
            continue
        if sigs is None:
            sigs = [s for s in signatures() if not s.fallback and not s.hint]
        text = squeeze(" ".join([m.text, *more]))[:8192]
        for sig in sigs:
            if not any(k.decode("utf-8", errors="replace") in text for k in sig.keywords):
                continue
            found = sig.pattern.search(text)
            if found is not None:
                groups = {k: v for k, v in found.groupdict().items() if v is not None}
                out.append(Match(sig, m.line_no, text[:1000], groups, m.rank, m.context))
    return out
