"""Words that stand for a value someone else fills in: the shell (``$NUM_GPUS``, ``${N}``,
``$(nproc)``, backticks) or the reader of a document (``<num_processes>``, ``<N-1>``, ``{N}``,
``NUM_GPUS``). envdoctor reads them as unknown: it never guesses their value into a finding.
"""

from __future__ import annotations

import re

#: a documentation placeholder as one shell word: ``<num_processes>``, ``<N-1>``, ``{N}``, ``[N]``
_DOC = re.compile(r"^(<[^<>\s]+>|\{[^{}\s]+\}|\[[^\[\]\s]+\])$")
#: a bare capitalised name where a number belongs (``--num_processes NUM_GPUS``)
_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def is_doc_placeholder(word: str) -> bool:
    """``<num_processes>``, ``<N-1>``, ``{N}``, ``[N]``: a word a reader replaces (a shell would
    read ``<…>`` as a redirection no launch line means)."""
    return bool(_DOC.match(word.strip()))


def placeholder(word: str, number: bool = False) -> bool:
    """Whether ``word`` is left to the shell or to the reader; with ``number`` (a count or a GPU
    index belongs there) a bare capitalised name (``NUM_GPUS``, ``N``) counts too."""
    text = word.strip()
    if "$" in text or "`" in text or is_doc_placeholder(text):
        return True
    return number and bool(_NAME.match(text))
