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
    if not tried:
        return []
    lines: list[str] | None = None  # the head's lines, split once a message needs them
    sigs: list[Signature] | None = None
    out: list[Match] = []
    for m in tried[:MAX_LINES]:
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
