"""A traceback Python's logging printed for a record its handler could not emit.

``logging.Handler.handleError`` writes ``--- Logging error ---``, the traceback of the failed
write (an encoding the stream cannot take, a format string that does not fit its arguments),
then ``Call stack:`` / ``Message:`` / ``Arguments:``, and returns: the program goes on. Such an
exception is no failure of the run.
"""

from __future__ import annotations

from envdoctor.triage.interface import Match

#: the line logging's handleError writes before the traceback
MARK = "--- Logging error ---"


def printed_by_logging(m: Match) -> bool:
    """``m``'s exception closes the traceback that logging's handleError printed."""
    for i in range(len(m.context) - 1, max(len(m.context) - 80, -1), -1):
        line = m.context[i]
        if MARK in line:
            return True
        if "Traceback (most recent call last)" in line:
            return i > 0 and MARK in m.context[i - 1]
    return False


def ends_in_call_stack(lines: list[str]) -> bool:
    """The frames at the end of ``lines`` are the ``Call stack:`` of logging's report (the
    caller of the logging call that failed), not a traceback cut before its exception."""
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if "Traceback (most recent call last)" in line:
            return False
        if line.strip() == "Call stack:":
            return any(MARK in x for x in lines[max(0, i - 80) : i])
    return False
