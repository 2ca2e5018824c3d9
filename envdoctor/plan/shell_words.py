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
    if "$" in word and _VARIABLE.search(word):
        if _PLAIN.fullmatch(word):
            return word  # as written: the shell expands (and splits) it
        return '"' + re.sub(r'(["\\`])', r"\\\1", word) + '"'  # expanded, kept one word
    return shlex.quote(word)


def join(words: Iterable[str]) -> str:
    """``shlex.join`` that leaves shell variables to the shell."""
    return " ".join(quote(w) for w in words)
