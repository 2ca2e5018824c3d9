"""Words joined back into a command line that a shell runs as the user wrote it: a word that
refers to a shell variable (``$MASTER_ADDR``, ``rdzv_endpoint=${HOST}:6000``) or substitutes a
command (``$(hostname -s):``) is left for the shell to expand, where ``shlex.join`` would quote it
into a literal (``'$MASTER_ADDR'``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

#: shlex's safe characters, and a variable's ``$`` / ``${…}``
_PLAIN = re.compile(r"[\w@%+=:,./${}-]+")
_VARIABLE = re.compile(r"\$(?:\{[^{}]+\}|\w+|\()")


def quote(word: str) -> str:
    if '"' in word and "$(" in word:
        outside = _HOLD.sub("", hold(word)[0])  # what the shell quotes itself: not its substitutions
        if not outside or _PLAIN.fullmatch(outside):
            return word  # as written: its substitutions hold double quotes of their own
    if "$" in word and _VARIABLE.search(word):
        if _PLAIN.fullmatch(word):
            return word  # as written: the shell expands (and splits) it
        return '"' + re.sub(r'(["\\`])', r"\\\1", word) + '"'  # expanded, kept one word
    return shlex.quote(word)


def join(words: Iterable[str]) -> str:
    """``shlex.join`` that leaves shell variables to the shell."""
    return " ".join(quote(w) for w in words)


def hold(text: str) -> tuple[str, list[str]]:
    """``text`` with each command substitution ``$(…)`` outside single quotes (``$((…))`` too)
    replaced by a placeholder that any split keeps inside its word, and the substitutions as
    written, for :func:`restore`. A substitution left open stays as written, and so does the
    text after it (each ``$(`` is scanned once: linear time on any text)."""
    if "$(" not in text or _MARK in text:  # (a text holding the placeholder's mark: as shlex splits it)
        return text, []
    bodies: list[str] = []
    out: list[str] = []
    i, quote = 0, ""
    while i < len(text):
        c = text[i]
        if c == "\\" and quote != "'":
            out.append(text[i : i + 2])
            i += 2
            continue
        if c in "'\"" and quote in ("", c):
            quote = "" if quote else c
        elif c == "$" and quote != "'" and text.startswith("$(", i):
            end = _closing(text, i + 2)
            if end is None:
                out.append(text[i:])
                break
            out.append(f"{_MARK}{len(bodies)}\ue001")
            bodies.append(text[i : end + 1])
            i = end + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), bodies


def restore(word: str, bodies: list[str]) -> str:
    """A word of held text with its substitutions back as written."""
    return _HOLD.sub(lambda m: bodies[int(m.group(1))], word) if bodies and _MARK in word else word


def split(line: str, comments: bool = False) -> list[str]:
    """``shlex.split(line)`` with each command substitution kept, as written, inside the word it
    belongs to (``torchrun $(python -c 'import swift, os; print(…)')/cli/rlhf.py``: its quotes and
    spaces would otherwise split it into words of the command around it); ``ValueError`` as
    ``shlex.split`` raises it."""
    held, bodies = hold(line)
    return [restore(w, bodies) for w in shlex.split(held, comments=comments)]


_MARK = "\ue000"  # a private-use character: the placeholder's start
_HOLD = re.compile(_MARK + "(\\d+)\ue001")


def _closing(line: str, i: int) -> int | None:
    """The index of the ``)`` that closes a substitution whose body starts at ``i``."""
    depth, quote = 1, ""
    while i < len(line):
        c = line[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None
