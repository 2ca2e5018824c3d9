"""Quote characters made soft for matching a message against what envdoctor knows of it.

A message pasted from a rendered page has lost or changed its quotes: markdown eats the
backticks around a name (`` `rope_scaling` must be `` reads "rope_scaling must be"), a forum
typesets ``'x'`` as ``‘x’``, a page's source keeps ``&#39;``, a writer swaps ``'`` and ``"``;
markdown also renders ``__init__`` as a bold "init" and a copy of its source keeps ``\\_``. Both
sides of a match are read alike here, so that a message with its quotes, without them, or with
other ones meets the same raise-site template (``soft``: literal text) or catalogue signature
(``soft_regex``: a regex's source). Nothing else is made soft: a quote that goes only takes its
own place, never lets a literal run on into a longer word (``'foo'`` does not meet ``foobar``).
"""

from __future__ import annotations

import re
from functools import lru_cache

#: the quote characters: ASCII's three, the typographic ones (single, double, low, reversed),
#: the acute accent and primes that typesetting puts for an apostrophe, full-width forms
QUOTES = "`'\"\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u00b4\u2032\u2033\uff02\uff07\uff40"
_QUOTE_SET = frozenset(QUOTES)
#: the HTML entities of quotes that a page's source keeps
_ENTITIES = re.compile(r"&(?:quot|apos|#3[49]|#x2[27]|#96|#x60);")
#: a dunder name rendered bold by markdown (``__init__`` -> "init"; its source's ``**init**``)
_DUNDER = re.compile(r"(?<![\w*])(?:__|\*\*)([A-Za-z]\w{0,60}?)(?:__|\*\*)(?![\w*])")
_RUNS = re.compile("[" + re.escape(QUOTES) + "]+")
_EMPTY = re.compile("[" + re.escape(QUOTES) + "]{2}")
#: what ``soft`` reads otherwise than as written: a quote, markdown's escape or bold, an entity
_SOFTENED = re.compile("[" + re.escape(QUOTES) + r"]|\\_|__|\*\*|&(?:quot|apos|#)")
_DROP = {ord(q): None for q in QUOTES}
_SPACES = re.compile(r"\s+")


def _markup(text: str) -> str:
    """``text`` with markdown's escapes and bold dunders read back, quote entities as quotes."""
    if "\\_" in text:
        text = text.replace("\\_", "_")
    if "__" in text or "**" in text:
        text = _DUNDER.sub(r"\1", text)
    if "&" in text and ";" in text:
        text = _ENTITIES.sub("'", text)
    return text


def soft(text: str) -> str:
    """``text`` as its words read whatever its quotes: markup read back (``_markup``), every
    quote character dropped but an empty string's (``_run``), a run of spaces left by one made
    one space (``text``'s other spacing as it is)."""
    text = _markup(text)
    if _EMPTY.search(text):
        text = _RUNS.sub(_run, text)
    elif text.isascii():  # three replaces in C: most of a raise index's templates
        text = text.replace("`", "").replace("'", "").replace('"', "")
    else:
        text = text.translate(_DROP)
    return _SPACES.sub(" ", text) if "  " in text else text


def _run(m: re.Match[str]) -> str:
    """What a run of quotes leaves: ``''`` for an empty string's (two or more quotes with no word
    character either side: ``invalid choice: ''`` is not ``invalid choice: x``), else nothing."""
    text, start, end = m.string, m.start(), m.end()
    if end - start < 2 or _is_word(text[start - 1 : start]) or _is_word(text[end : end + 1]):
        return ""
    return "''"


def soft_marked(text: str) -> tuple[str, frozenset[int]]:
    """``soft(text)`` squeezed and stripped, and the places in it where quotes were dropped (the
    index of the character that followed them): a match can ask whether the text showed a quote
    there (``raise_sites.fit``)."""
    text = " ".join(_markup(text).split())
    if _QUOTE_SET.isdisjoint(text):
        return text, frozenset()
    out: list[str] = []
    marks: set[int] = set()
    n = 0
    at = 0
    last = ""  # the last character put out
    for m in [*_RUNS.finditer(text), None]:
        piece = text[at : m.start() if m else len(text)]
        if last == " " and piece[:1] == " ":
            piece = piece[1:]  # a quote alone between spaces: one space stays
        if out:
            marks.add(n)
        out.append(piece)
        n += len(piece)
        last = piece[-1:] or last
        if m is not None:
            kept = _run(m)  # an empty string's quotes stay
            out.append(kept)
            n += len(kept)
            last = kept[-1:] or last
            at = m.end()
    joined = "".join(out)
    lead = len(joined) - len(joined.lstrip())
    stripped = joined.strip()
    return stripped, frozenset(m - lead for m in marks if 0 <= m - lead <= len(stripped))


def name_char(ch: str) -> bool:
    """Whether ``ch`` may go on a quoted name (``NAME_CLASS``)."""
    return ch.isalnum() or ch in "_.-/"


def edges(text: str) -> tuple[bool, bool]:
    """Whether ``text`` opens with quotes before a word character, and whether it closes with
    quotes after one: where ``soft`` dropped them, the word must not run on in a message (a
    template ``no attribute 'foo'`` meets ``no attribute foo``, not ``no attribute foobar``)."""
    text = text.strip()
    head = len(text) > 1 and text[0] in _QUOTE_SET and _is_word(text.lstrip(QUOTES)[:1])
    tail = len(text) > 1 and text[-1] in _QUOTE_SET and _is_word(text.rstrip(QUOTES)[-1:])
    return head, tail


def lead(literal: str, least: int = 6) -> str:
    """The start of ``literal`` before its first quote, where ``least`` characters long; ''
    where it is shorter (``literal`` itself where it holds no quote)."""
    cut = next((i for i, ch in enumerate(literal) if ch in _QUOTE_SET), len(literal))
    return literal[:cut] if cut >= least else ""


def softened(text: str) -> bool:
    """Whether ``soft`` reads ``text`` otherwise than as written."""
    if text.isascii():  # a few searches in C, cheaper than one regex's (a raise index asks 47,000)
        return (
            "'" in text or "`" in text or '"' in text or "&" in text or "__" in text or "**" in text
        ) or "\\_" in text
    return _SOFTENED.search(text) is not None


def soft_template(template: str) -> str:
    """A raise's template with its quotes soft (``soft``), stripped at its ends."""
    return soft(template).strip()


def quoted_parts(template: str, wild: str) -> tuple[bool, bool, tuple[int, ...]]:
    """A raise's template's ``edges``, and its literal parts (between ``wild``) that a quote opens
    after a wildcard (``'{x}' is not``): where a message shows no quote there, the wildcard's
    value is one word."""
    template = _markup(template)
    parts = template.split(wild)
    return (*edges(template), tuple(i for i, part in enumerate(parts) if i and part[:1] in _QUOTE_SET))


def _is_word(ch: str) -> bool:
    return ch[:1].isalnum() or ch[:1] == "_"


# -- regular expressions ------------------------------------------------------------------------

_SPECIAL = frozenset("()[]{}|?*+.^$")
_QUANT = frozenset("?*+{")
#: the class of the quotes that ``soft_regex`` puts for one: ASCII's, a line's others read as
#: them first (``ascii_quotes``; a class of characters past Latin-1 costs its regex a 64K map)
QUOTE_CLASS = "[`'\"]"
_TO_ASCII = str.maketrans({q: "'" for q in QUOTES if not q.isascii()} | {"\u201c": '"', "\u201d": '"'})
_TO_ASCII |= str.maketrans({"\u201e": '"', "\u201f": '"', "\u2033": '"', "\uff02": '"', "\uff40": "`"})


def ascii_quotes(text: str) -> str:
    """``text`` with its typographic and full-width quotes as ASCII's (what a soft regex knows)."""
    return text if text.isascii() else text.translate(_TO_ASCII)


#: the characters that go on a quoted name (``'vllm.worker.worker'``, ``'a-b/c'``): where the
#: quotes that closed it went, none of them may follow
NAME_CLASS = r"[\w.\-/]"
#: a soft quote's "none" branch: only where the text holds no quote there, so a quote that is
#: there is taken (as Python 3.10 has no atomic group): a look-ahead after it (``'(?!/dev/shm)``)
#: then reads what follows the quote, not the quote itself
_NO_QUOTE = f"(?!{QUOTE_CLASS})"


def compile_soft(source: str, flags: int = 0) -> re.Pattern[str]:
    """``source`` compiled with its quotes soft (``soft_regex``), or as it is where that form does
    not compile; ``re.error`` where neither does."""
    pattern = re.compile(source, flags)
    try:
        return re.compile(soft_regex(source), flags)
    except re.error:
        return pattern


@lru_cache(maxsize=1024)
def soft_regex(source: str) -> str:
    """``source`` (a regex) with its quotes soft: each run of quote characters outside a class
    matches any quotes or none (``(?:[Q]|)``); one that opens or closes a name, none only where
    the name does not go on (``NAME_CLASS``: ``'vllm.worker'`` is not ``vllm.worker.worker``; at
    a class or a group, not inside a name); an empty string's (``''``) quotes of some kind.
    A class that holds a quote holds every one (``[^']`` excludes them all). The rest is left as
    written (a quote in a look-behind makes it fail to compile: ``compile_soft`` then takes the
    source as it is)."""
    if _QUOTE_SET.isdisjoint(source):
        return source
    tokens = _tokens(source)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok, lit = tokens[i]
        if lit is None or lit not in _QUOTE_SET:
            out.append(_soft_class(tok) if tok.startswith("[") else tok)
            i += 1
            continue
        end = i + 1  # a run of quotes (none of them quantified) is read as one
        while end < len(tokens) and tokens[end][1] in _QUOTE_SET and tokens[end][1] is not None:
            end += 1
        if end < len(tokens) and tokens[end][0][:1] in _QUANT:
            end = max(i + 1, end - 1)  # the last one is quantified: it goes alone
        left = _neighbour(tokens, i, -1)
        right = _neighbour(tokens, end - 1, 1)
        if end - i >= 2 and not _is_word(left or "") and not _is_word(right or ""):
            one = QUOTE_CLASS  # an empty string (``''``): quotes of some kind, not none
        elif left is not None and right is not None and _is_word(left) == _is_word(right):
            one = f"(?:{QUOTE_CLASS}|{_NO_QUOTE})"
        elif right is not None and _is_word(right) and not _is_word(left or ""):
            one = f"(?:{QUOTE_CLASS}|(?<!{NAME_CLASS}){_NO_QUOTE})"  # an opening quote: no name before
        elif left is not None and _is_word(left) and not _is_word(right or ""):
            one = f"(?:{QUOTE_CLASS}|(?!{NAME_CLASS}){_NO_QUOTE})"  # a closing one: the name ends there
        else:  # next to a class or a group: not inside a name
            one = f"(?:{QUOTE_CLASS}|(?<!{NAME_CLASS}){_NO_QUOTE}|(?!{NAME_CLASS}){_NO_QUOTE})"
        out.extend([one] * (end - i))
        i = end
    return "".join(out)


def _neighbour(tokens: list[tuple[str, str | None]], i: int, step: int) -> str | None:
    """The literal character next to token ``i`` (``step`` -1: before, 1: after), or None where
    it is not a plain one (a class, a group, a quantified character, another quote, an end)."""
    j = i + step
    if not 0 <= j < len(tokens):
        return None
    lit = tokens[j][1]
    if lit is None or lit in _QUOTE_SET:
        return None
    if step == 1 and j + 1 < len(tokens) and tokens[j + 1][0][:1] in _QUANT:
        return None  # an optional or repeated character
    return lit


def _tokens(source: str) -> list[tuple[str, str | None]]:
    """The source's tokens, each with the literal character it stands for (None: not one)."""
    out: list[tuple[str, str | None]] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch == "\\" and i + 1 < n:
            nxt = source[i + 1]
            out.append((source[i : i + 2], None if nxt.isalnum() else nxt))
            i += 2
        elif ch == "[":
            j = i + 1
            if j < n and source[j] == "^":
                j += 1
            if j < n and source[j] == "]":
                j += 1
            while j < n and source[j] != "]":
                j += 2 if source[j] == "\\" else 1
            out.append((source[i : j + 1], None))
            i = j + 1
        elif ch == "(" and source[i + 1 : i + 2] == "?":
            # a group's opening with its flags or name, as one token (``(?P<name>``, ``(?:``)
            m = re.compile(r"\(\?(?:P<\w+>|P=\w+\)|[:=!>]|<[=!]|[aiLmsux-]*[:)]|#[^)]*\))").match(source, i)
            end = m.end() if m else i + 2
            out.append((source[i:end], None))
            i = end
        else:
            out.append((ch, None if ch in _SPECIAL else ch))
            i += 1
    return out


def _soft_class(tok: str) -> str:
    """A class token with every quote added where it holds one (escaped or not)."""
    body = tok[1:-1]
    if _QUOTE_SET.isdisjoint(body) or not tok.endswith("]"):
        return tok
    return "[" + body + QUOTE_CLASS[1:-1] + "]"
