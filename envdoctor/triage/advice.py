"""The advice an exception's own message gives, quoted as the fix of an unrecognised crash.

Packages often say in the message what to change: "Please reduce the input size or increase the
encoder cache size by setting --limit-mm-per-prompt at startup" (vLLM), "You can avoid this issue
by increasing 'max_length' or modifying the 'truncation_strategy'" (ms-swift), "You must call
wandb.init() before wandb.log()". Where envdoctor recognises no failure (TRI003), that sentence is
a better fix than "read the traceback": ``advice`` finds it. Only the exception's message is read
(the text after ``SomeError:``, with the lines that continue it when the line stops mid-sentence),
one sentence that starts as advice does ("Please …", "You can / should / must …", "Try …",
"Consider …", "Make sure …", an imperative of a setting: "Set …", "Increase …", "Reduce …"). A
sentence that asks for a report, a debug run or a look at another traceback is no fix ("please
report this issue", "please check the stack trace above", "For debugging consider passing
CUDA_LAUNCH_BLOCKING=1"), nor a statement in advice's words ("you can only …", "you can't …").
The quote is bounded (``LIMIT`` characters) and free of control characters. The severity of the
finding is not changed: a message's advice is not a diagnosis (C7 of
docs/validation/triage-misses-2026-11-29.md: refusals read as errors named wrong causes).
"""

from __future__ import annotations

import re

from envdoctor.redact import _CONTROLS, cut
from envdoctor.triage.scanner import ANSI

LIMIT = 240  # characters of the quoted sentence
MIN = 24  # a shorter "sentence" is a fragment ("Consider adjusting")
#: the end of an exception's class name before its message ("ValueError: ", "wandb.errors.Error: ")
_NAME_ENDS = ("Error: ", "Exception: ")
#: the terminal's escapes (colours, OSC 8 links: the scanner's ``ANSI``) and redact's control class
#: (C0 and C1 controls, bidirectional overrides, line separators), each replaced by a space
_CONTROL = re.compile(f"{ANSI.pattern}|[{_CONTROLS}]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`'\"])")
_ADVICE = re.compile(
    r"^(?:(?:or|alternatively|otherwise|instead),?\s+)?(?:please,?\s+)?"
    r"(?:you (?:can|could|may|might|should|need to|must|have to) (?!only\b|not\b)"
    r"|you'll need to |try |consider |make sure |ensure |to (?:fix|avoid|resolve|solve) (?:this|it)\b"
    r"|(?:set|increase|decrease|reduce|lower|raise|pass|use|install|upgrade|downgrade|specify|enable"
    r"|disable|add|remove|change|update|reinstall|provide|switch|rename|convert) "
    # an imperative, not a noun phrase that starts alike ("Call to … failed", "Use of …", "Set of …")
    r"(?!(?:to|of|for|in|on|at|is|was|has|had|failed|error)\b))",
    re.IGNORECASE,
)
_NOT_A_FIX = re.compile(
    r"(?i)\breport\b|\bfile an issue|\bopen an issue|/issues\b|\bcontact\b|\bdebug|stack ?trace|traceback"
    r"|\blogs? (?:above|for)\b|\bcheck the (?:log|error|output)|to access the"
)
_ENDED = (".", "!", "?")


def _message(text: str, more: list[str]) -> str:
    ends = [(i, n) for n in _NAME_ENDS if (i := text.find(n)) > 0 or text.startswith(n)]
    if not ends:
        return ""
    at, name = min(ends)
    msg = text[at + len(name) :].strip()
    for line in more:  # the message goes on on the next lines (a wrap, a pretty-printed message)
        if msg.endswith(_ENDED):
            break
        msg += " " + line
    return _CONTROL.sub(" ", msg)


def advice(text: str, more: list[str] | None = None) -> str:
    """The first sentence of the exception message in ``text`` (with ``more``, the lines after it)
    that advises a change; '' when none does."""
    msg = _message(text[:4000], more or [])
    if not msg:
        return ""
    for sentence in _SENTENCE.split(msg)[:12]:
        s = " ".join(sentence.split())
        if len(s) < MIN or not _ADVICE.match(s) or _NOT_A_FIX.search(s):
            continue
        return cut(s, LIMIT)  # redacted (a token in the message), then bounded
    return ""
