"""The redaction gate (``redact._lowered_if_any``) and the assignments' gate (``_HINT_WORDS``)
let through every text the regexes they replaced let through. The letters ``re`` takes for an
ASCII one under IGNORECASE are derived here from ``re`` itself over every code point (not
listed by hand), and every word of the old alternation is tried in every spelling they allow
(the full product), alone, in ASCII text and in non-ASCII text (the ``casefold`` path)."""

from __future__ import annotations

import itertools
import re
import string
from functools import lru_cache

from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor import redact
from tests.hostile.test_hostile_redact_gate import OLD_GATE


@lru_cache(maxsize=1)
def _same_letter() -> dict[str, list[str]]:
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    return {c: sorted(set(re.findall(f"(?i){c}", every))) for c in string.ascii_lowercase}


def _spellings(word: str) -> list[str]:
    same = _same_letter()
    return ["".join(p) for p in itertools.product(*[same.get(c, [c]) for c in word])]


def _old_words() -> list[str]:
    body = OLD_GATE.pattern.replace("(?i)", "").replace("gh[pousr]_", "ghp_|gho_|ghu_|ghs_|ghr_")
    return [w.lower() for w in body.split("|") if not w.startswith("[")]


def test_every_spelling_of_every_old_word_passes_the_gate():
    checked = 0
    for word in _old_words():
        for spelt in _spellings(word):
            for text in (spelt, f"zz {spelt} zz", f"\u00e9{spelt}\u00e9", f"\u0130{spelt}"):
                if OLD_GATE.search(text):
                    checked += 1
                    assert redact._lowered_if_any(text) is not None, ascii(text)
    assert checked > 100_000


def test_every_spelling_the_assignments_regex_finds_passes_its_gate():
    for word in redact._HINT_WORDS:
        for spelt in _spellings(word):
            for text in (f"{spelt}=x", f"\u00e9 {spelt}: x"):
                low = redact._lowered_if_any(text)
                if redact._HINT.search(text):
                    assert low is not None and any(w in low for w in redact._HINT_WORDS), ascii(text)


_ALPHABET = st.sampled_from(
    list("tokenseacrpwdyhfbgilmuxAKIOSTPW_-/=:?&;@ \u0130\u0131\u017f\u212a\u00e9\u0307\u00df")
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_random_text_the_old_gate_passed_passes_both_gates(text):
    low = redact._lowered_if_any(text)
    if OLD_GATE.search(text):
        assert low is not None
    if redact._HINT.search(text):
        assert low is not None and any(w in low for w in redact._HINT_WORDS)
