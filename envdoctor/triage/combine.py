"""The scanner's per-line work in a few regex calls, whatever the number of signatures.

A line holding ``Error`` names some 35 signatures, and each entry added to the known-failure
catalogue adds one: matched one by one in Python, a flood of distinct error lines (1.5 million of
them in 100 MB) took a minute. Here:

- ``Literals.held``: the keywords a line holds, from one ``findall`` of their trie (not one
  ``bytes.find`` per keyword);
- ``Gate.hit``: whether any signature still open on a line can match it: a pattern whose every
  match starts with a literal is searched only where the line holds one (one ``findall`` of all
  the leading literals), one anchored at the start is tried there; nearly every line of a flood
  is told in two or three calls that none matches, and only a line one matches is matched
  signature by signature;
- ``digit_guards``: the literals without which a pattern cannot tell two lines apart that differ
  in digit values only, so that the scanner decides such lines once per digit shape.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

try:  # the regex parser: re._parser from Python 3.11, sre_parse on 3.10 (requires-python)
    import re._constants as _c  # type: ignore[import-not-found,unused-ignore]
    import re._parser as _p  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef,unused-ignore]
    import sre_parse as _p  # type: ignore[no-redef,unused-ignore]

T = TypeVar("T", str, bytes)
#: lines looked at one literal or pattern at a time before the trie and the gates are built
#: (tens of milliseconds of regex parsing and compiling, which a quiet log need not pay)
EAGER = 256
_NONE: frozenset = frozenset()
_DEFAULT_FLAGS = re.compile("").flags


def _trie(literals: Sequence[T]) -> T:
    """A regex matching the longest of ``literals`` at a place: their trie as nested groups."""
    root: dict = {}
    for lit in literals:
        node = root
        for i in range(len(lit)):
            node = node.setdefault(lit[i : i + 1], {})
        node[None] = {}
    empty, bar, open_, close = (
        (b"", b"|", b"(?:", b")") if isinstance(literals[0], bytes) else ("", "|", "(?:", ")")
    )

    def emit(node: dict) -> T:
        alts = [
            re.escape(ch) + emit(sub)
            for ch, sub in sorted(node.items(), key=lambda kv: kv[0] or empty)
            if ch is not None
        ]
        if not alts:
            return empty
        if len(alts) == 1 and None not in node:
            return alts[0]
        return open_ + bar.join(alts + ([empty] if None in node else [])) + close

    return emit(root)


class Literals(Generic[T]):
    """Which of a set of literal strings (``str`` or ``bytes``) a text holds, in one ``findall``.

    The alternation is a trie (one branch per next character, the longer way tried first), so
    at each place it takes the longest literal that starts there; one that starts at the same
    place is a prefix of it (``inside``). A keyword that
    starts inside a match found and runs past its end is not found by ``findall`` (it goes on after
    the match): those few (``across``) are looked for with ``in``."""

    def __init__(self, literals: Iterable[T]) -> None:
        self.kws: list[T] = sorted(set(literals), key=lambda k: (-len(k), k))
        self._any: re.Pattern[T] | None = None  # compiled at the first line (most logs have none)
        self._inside: dict[T, frozenset[T]] = {}
        self._across: dict[T, tuple[T, ...]] = {}
        self._found: dict[frozenset[T], tuple[frozenset[T], tuple[T, ...]]] = {}
        self.looks = 0  # texts looked at: the first ``EAGER`` with ``in`` (no regex to build)

    @property
    def any(self) -> re.Pattern[T] | None:
        """The trie of the literals as a regex (None when there are none)."""
        if self._any is None and self.kws:
            self._any = re.compile(_trie(self.kws))
        return self._any

    def held(self, text: T) -> frozenset[T]:
        """The literals that ``text`` holds (exactly those ``k`` with ``k in text``)."""
        if self.looks < EAGER:  # a log with a few such lines pays no regex compilation
            self.looks += 1
            return frozenset([k for k in self.kws if k in text])
        found_re = self._any or self.any
        if found_re is None:
            return _NONE
        found_list = found_re.findall(text)
        if not found_list:
            return _NONE  # most lines of a flood hold none of a gate's leads
        found = frozenset(found_list)
        known = self._found.get(found)
        if known is None:
            inside = frozenset().union(*(self.inside(k) for k in found))
            across = tuple(dict.fromkeys(b for k in found for b in self.across(k) if b not in inside))
            if len(self._found) >= 4096:
                self._found.clear()
            known = self._found[found] = (inside, across)
        inside, across = known
        if not across:
            return inside
        return inside | frozenset(b for b in across if b in text)

    def inside(self, a: T) -> frozenset[T]:
        """The literals within ``a`` (itself too)."""
        if a not in self._inside:
            self._inside[a] = frozenset(b for b in self.kws if b in a)
        return self._inside[a]

    def across(self, a: T) -> tuple[T, ...]:
        """The literals not within ``a`` that a proper suffix of ``a`` begins."""
        if a not in self._across:
            self._across[a] = tuple(
                b for b in self.kws if b not in a and any(b.startswith(a[j:]) for j in range(1, len(a)))
            )
        return self._across[a]


@functools.lru_cache(maxsize=1024)
def starts(pattern: re.Pattern[str], folded: bool = False) -> tuple[frozenset[str], bool] | None:
    """How every match of ``pattern`` starts: with one of the literals returned, or at the text's
    start (``True``: some alternative is anchored with ``^``); None when an alternative may start
    otherwise (a class, a repeat, a lookaround). With ``folded``, case-insensitive groups count
    too (their literals as written: compare lowercased, ASCII only)."""
    if pattern.flags != _DEFAULT_FLAGS:
        return None
    try:
        return _starts(list(_p.parse(pattern.pattern)), folded)
    except (re.error, RecursionError):
        return None


def _starts(items: list, folded: bool = False) -> tuple[frozenset[str], bool] | None:
    if not items:
        return None
    op, av = items[0]
    if op == _c.LITERAL:
        run = []
        for op, av in items:
            if op != _c.LITERAL:
                break
            run.append(chr(av))
        lead = "".join(run)
        rest = _starts(items[len(run) :], folded)  # the parser factors out prefixes: ab|ac is a(?:b|c)
        if rest is not None and rest[0] and not rest[1]:
            return frozenset(lead + more for more in rest[0]), False
        return frozenset([lead]), False
    if op == _c.AT and av in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING):
        return frozenset(), True
    if op == _c.SUBPATTERN and {av[1], av[2]} <= ({0, re.IGNORECASE} if folded else {0}):
        return _starts(list(av[3]), folded)  # a group (with no flags of its own but (?i) if folded)
    if op == _c.BRANCH:
        leads: frozenset[str] = frozenset()
        anchored = False
        for branch in av[1]:
            found = _starts(list(branch), folded)
            if found is None:
                return None
            leads |= found[0]
            anchored = anchored or found[1]
        return leads, anchored
    return None


@functools.lru_cache(maxsize=1024)
def gate_literals(pattern: re.Pattern[str]) -> tuple[frozenset[str], bool] | None:
    """What a gate looks for before searching ``pattern`` (``Gate``): ASCII literals, lowercased,
    one of which every match holds but those of alternatives anchored at the start (``True``:
    try it there); None when there are none (search it on every text).

    The literals are the leads of its alternatives (``starts``) where some alternative is
    anchored; else those or the literals that every match holds wherever they are in it
    (``needs``: ``torch.dtype`` rather than the ``ValueError`` that leads to it), whichever are
    longer (the rarer in a text)."""
    found = starts(pattern, folded=True)
    if found is not None and not found[1]:
        needed = needs(pattern)
        if needed is not None and _rarer(needed, found[0]):
            found = needed, False
    elif found is None:
        needed = needs(pattern)
        found = (needed, False) if needed is not None else None
    if found is None or not all(lead.isascii() for lead in found[0]):
        return None
    return frozenset(lead.lower() for lead in found[0]), found[1]


def _rarer(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether literals ``a`` are likelier to be absent from a text than ``b``: a longer
    shortest one, then fewer."""
    return (min(map(len, a)), -len(a)) > (min(map(len, b)), -len(b))


@functools.lru_cache(maxsize=1024)
def needs(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Literals one of which every match of ``pattern`` holds (those of case-insensitive groups
    as written: compare lowercased, ASCII only); None when none is found."""
    if pattern.flags != _DEFAULT_FLAGS:
        return None
    try:
        return _needs(list(_p.parse(pattern.pattern)))
    except (re.error, RecursionError):
        return None


def _needs(items: Iterable, folded: bool = True) -> frozenset[str] | None:
    """``needs`` of a sequence: the rarest of the sets that one of its parts requires (a run of
    literals; a group, an alternation each of whose branches requires some, a repeat at least
    once: what their content requires). Without ``folded``, case-insensitive groups do not count
    (their literals as written need not be in a text)."""
    best: frozenset[str] | None = None
    run: list[str] = []
    for op, av in [*items, (_c.FAILURE, None)]:  # (an end: the last run of literals is counted)
        if op == _c.LITERAL:
            run.append(chr(av))
            continue
        found: frozenset[str] | None = None
        if run:
            found, run = frozenset(["".join(run)]), []
            best = found if best is None or _rarer(found, best) else best
            found = None
        if op == _c.SUBPATTERN and {av[1], av[2]} <= ({0, re.IGNORECASE} if folded else {0}):
            found = _needs(av[3], folded)
        elif op == _c.BRANCH:
            branches = [_needs(branch, folded) for branch in av[1]]
            found = frozenset().union(*[b for b in branches if b is not None])
            found = found if None not in branches else None
        elif op in _REPEATS and av[0] >= 1:
            found = _needs(av[2], folded)
        elif op == getattr(_c, "ATOMIC_GROUP", None):
            found = _needs(av, folded)
        if found is not None and (best is None or _rarer(found, best)):
            best = found
    return best


class Gate:
    """Whether any of some patterns matches a text, in a few regex calls whatever their number.

    A pattern whose every match starts with a literal (case-insensitive ones too) is searched
    only when the text holds one of them: one ``findall`` of all of them over the text
    lowercased (``Literals``; an ASCII text, where lowercasing is exact; any other text has each
    such pattern searched). One with alternatives anchored at the start is tried there (``match``:
    one step); the others (a class, a repeat first) are searched. ``calls`` counts the regex
    calls made."""

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        self.patterns = tuple(patterns)
        self.calls = 0
        self.looks = 0  # texts looked at: the first ``EAGER`` with each pattern searched

    def _build(self) -> None:
        by_lead: dict[str, list[re.Pattern[str]]] = {}
        at_start: list[re.Pattern[str]] = []
        rest: list[re.Pattern[str]] = []
        for pattern in self.patterns:
            found = gate_literals(pattern)
            if found is None:
                rest.append(pattern)
                continue
            leads, anchored = found
            for lead in leads:
                by_lead.setdefault(lead, []).append(pattern)
            if anchored:
                at_start.append(pattern)
        self.by_lead = by_lead
        self.led = tuple({id(p): p for ps in by_lead.values() for p in ps}.values())
        self.literals: Literals[str] = Literals(by_lead)
        self.literals.looks = EAGER  # the trie at once: this gate is busy
        self.at_start = tuple(at_start)
        self.rest = tuple(rest)
        self._led: dict[frozenset[str], tuple[re.Pattern[str], ...]] = {}

    def hit(self, text: str, leads: frozenset[str] | None = None) -> bool:
        """Whether one of the patterns matches ``text`` (somewhere, as ``search`` finds).
        ``leads``: the literals (lowercased) that the caller found (GNU grep) in a text that
        ``text`` is part of: all those ``text.lower()`` holds, maybe more (each a search more)."""
        if self.looks <= EAGER:
            self.looks += 1
            if self.looks <= EAGER:  # a few lines: each pattern searched, nothing to build
                for pattern in self.patterns:
                    self.calls += 1
                    if pattern.search(text) is not None:
                        return True
                return False
            self._build()
        for pattern in self.rest:
            self.calls += 1
            if pattern.search(text) is not None:
                return True
        for pattern in self.at_start:
            self.calls += 1
            if pattern.match(text) is not None:
                return True
        if not self.led:
            return False
        if text.isascii():
            if leads is None:
                self.calls += 1
                held = self.literals.held(text.lower())
            else:
                held = leads
            if not held:
                return False
            led = self._led.get(held)
            if led is None:
                if len(self._led) >= 4096:
                    self._led.clear()
                by_lead = self.by_lead
                led = self._led[held] = tuple(
                    {id(p): p for k in held if k in by_lead for p in by_lead[k]}.values()
                )
            if not led:
                return False
        else:
            led = self.led
        for pattern in led:
            self.calls += 1
            if pattern.search(text) is not None:
                return True
        return False


_REPEATS = tuple(getattr(_c, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_c, n))
_DIGIT_LO, _DIGIT_HI = ord("0"), ord("9")


@functools.lru_cache(maxsize=1024)
def digit_guards(pattern: re.Pattern[str]) -> tuple[bytes, ...] | None:
    """Literals without which ``pattern`` matches a text exactly when it matches the same text with
    other digit values (ASCII digits, same length): ``()`` when it never tells one digit from
    another (``\\d``, ``\\w``, ``.`` and a class holding all digits or none treat them alike);
    else the leads of its alternatives that do (``EZ9999`` in ``…|EZ9999.{0,300}``), when each of
    them starts with a literal, or literals one of which its every match holds (an alternative
    that opens with a quote that may be gone: ``(?:[`'"]|\\b)`` of ``quotes.soft_regex``); None
    otherwise (a digit class range, a backreference)."""
    if pattern.flags != _DEFAULT_FLAGS:
        return None
    try:
        items = list(_p.parse(pattern.pattern))
    except (re.error, RecursionError):
        return None
    branches = [list(b) for b in items[0][1][1]] if len(items) == 1 and items[0][0] == _c.BRANCH else [items]
    guards: set[str] = set()
    for branch in branches:
        if _blind(branch):
            continue
        found = _starts(branch)
        if found is None:
            held = _needs(branch, folded=False)
            found = (held, False) if held else None
        if found is None or found[1] or not found[0] or not all(lead.isascii() for lead in found[0]):
            return None
        guards |= found[0]
    return tuple(sorted(g.encode() for g in guards))


def _blind(items: Iterable) -> bool:
    """Whether ``items`` (parsed) treat every ASCII digit alike."""
    for op, av in items:
        if op in (_c.LITERAL, _c.NOT_LITERAL):
            if _DIGIT_LO <= av <= _DIGIT_HI:
                return False
        elif op == _c.IN:
            if not _blind_set(av):
                return False
        elif op in (_c.ANY, _c.AT, _c.CATEGORY):
            continue
        elif op == _c.SUBPATTERN:
            if not _blind(av[3]):
                return False
        elif op == _c.BRANCH:
            if not all(_blind(b) for b in av[1]):
                return False
        elif op in _REPEATS:
            if not _blind(av[2]):
                return False
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            if not _blind(av[1]):
                return False
        elif op == getattr(_c, "ATOMIC_GROUP", None):
            if not _blind(av):
                return False
        else:  # a backreference, a conditional, anything not known here
            return False
    return True


def _blind_set(items: Iterable) -> bool:
    """Whether a class holds every ASCII digit or none."""
    for op, av in items:
        if op == _c.LITERAL:
            if _DIGIT_LO <= av <= _DIGIT_HI:
                return False
        elif op == _c.RANGE:
            lo, hi = av
            if not (hi < _DIGIT_LO or lo > _DIGIT_HI or lo <= _DIGIT_LO and hi >= _DIGIT_HI):
                return False
        elif op not in (_c.NEGATE, _c.CATEGORY):
            return False
    return True
