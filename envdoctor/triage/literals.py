"""What a line holds of triage's literals, told from the records of one GNU ``grep -F -i -o``.

The prefilter's answer to a flood of distinct anchor lines (``prefilter``): grep reports, at each
place of a line, the longest of every literal (anchors, keywords, the gates' leads) ignoring
case, then moves past it; ``GrepLiterals`` turns those records into exactly the anchors, keywords
and leads the Python tries would have found in the line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from envdoctor.triage import combine, scanner
from envdoctor.triage.interface import Signature

_LOWER = bytes(range(256)).lower()  # a byte's ASCII lowercase, as grep -i in the C locale
ANCHOR, KEYWORD, LEAD = 0, 1, 2  # anchors, keywords, leads
#: a node of the trie of the literals (lowercased): the next byte -> its node; the (kind,
#: literal) that end here
_Node = tuple[dict[int, "_Node"], list[tuple[int, bytes]]]


class GrepLiterals:
    """What a line holds of the anchors, the keywords and the gates' leads, from the literals that
    grep found in it ignoring case (leftmost-longest: at each place the longest, then on after it).

    A literal held at some place lies within one found there, or begins in one and runs past its
    end (it begins no earlier: that found is the longest at its place). So a found text ``t``
    tells the literals within it (case matters for anchors and keywords: within ``t`` itself),
    and those that begin in it and run past it are found down the trie of all the literals,
    from each place in ``t`` where the rest of ``t`` begins one, along the bytes after ``t``."""

    def __init__(self, sc: scanner.Matcher) -> None:
        self.sc = sc
        lits = {ANCHOR: sc.anchors, KEYWORD: tuple(sc.keywords.kws), LEAD: leads(sc.sigs)}
        self.lits = lits
        self.all = tuple(dict.fromkeys(lit.lower() for kind in lits.values() for lit in kind))
        self.trie: _Node = ({}, [])
        for kind, kind_lits in lits.items():
            for lit in kind_lits:
                node = self.trie
                for c in lit.lower():
                    node = node[0].setdefault(c, ({}, []))
                node[1].append((kind, lit))
        #: found text -> the anchors and keywords within it, the leads (str) within it, where
        #: others may begin in it (``Found``)
        self._texts: dict[bytes, Found] = {}
        self._str: dict[bytes, str] = {}
        #: (found text, the bytes after it down the trie) -> what a line holds there
        self._held: dict[tuple[bytes, bytes], Held] = {}
        #: grep's records are lines: no literal may hold a newline (nor a NUL: an argument), nor
        #: be empty
        self.usable = (
            bool(self.all)
            and all(self.all)
            and not any(c in lit for lit in self.all for c in (b"\n", b"\r", b"\0"))
        )

    def _str_of(self, lead: bytes) -> str:
        return self._str.get(lead) or self._str.setdefault(lead, lead.decode())

    def text(self, t: bytes) -> Found:
        """What a found text ``t`` tells (``Found``)."""
        found = self._texts.get(t)
        if found is None:
            w = t.lower()
            lits = self.lits
            begins = []
            for j in range(1, len(w)):  # where the rest of t is the start of a longer literal
                node: _Node | None = self.trie
                for c in w[j:]:
                    node = node[0].get(c)  # type: ignore[index]
                    if node is None:
                        break
                if node is not None and node[0]:
                    begins.append((j, node))
            if len(self._texts) >= 4096:  # found texts are literals, in some case
                self._texts.clear()
            found = self._texts[t] = Found(
                tuple(a for a in lits[ANCHOR] if a in t),
                frozenset(k for k in lits[KEYWORD] if k in t),
                frozenset(self._str_of(le) for le in lits[LEAD] if le in w),
                tuple(begins),
            )
        return found

    def at_all(self, raw: bytes, rel: list[int], texts: list[bytes]) -> Held:
        """``at`` for a line where grep found several ``texts`` (at ``rel``)."""
        parts = [self.at(raw, at, t) for at, t in zip(rel, texts, strict=True)]
        return Held(
            tuple(a for part in parts for a in part.anchors),
            frozenset().union(*(part.keywords for part in parts)),
            frozenset().union(*(part.leads for part in parts)),
        )

    def at(self, raw: bytes, at: int, t: bytes) -> Held:
        """What ``raw`` holds within or past the text ``t`` found at ``at``: ``t`` and the bytes
        after it as far as the trie goes tell it all, and the same ones are told once (a
        flood's lines repeat them)."""
        found = self._texts.get(t) or self.text(t)
        end = far = at + len(t)
        n = len(raw)
        for _, node in found.begins:
            k = end
            while k < n:
                node = node[0].get(_LOWER[raw[k]])  # type: ignore[assignment]
                if node is None:
                    break
                k += 1
            if k > far:
                far = k
        key = (t, raw[end:far])
        held = self._held.get(key)
        if held is None:
            held = self._held_past(found, t, raw[end:far])
            if len(self._held) >= 4096:
                self._held.clear()
            self._held[key] = held
        return held

    def _held_past(self, found: Found, t: bytes, more: bytes) -> Held:
        """``found`` with the literals that begin in ``t`` and end in ``more``, the bytes after it."""
        anchors, keywords, leads = list(found.anchors), set(found.keywords), set(found.leads)
        line = t + more
        for j, node in found.begins:
            for c in more:  # each literal ending on the way, if it is there
                node = node[0].get(_LOWER[c])  # type: ignore[assignment]
                if node is None:
                    break
                for kind, lit in node[1]:
                    if kind == LEAD:
                        leads.add(self._str_of(lit))  # its end as found, ignoring case
                    elif not line.startswith(lit, j):
                        continue  # the same ignoring case only
                    elif kind == KEYWORD:
                        keywords.add(lit)
                    else:
                        anchors.append(lit)
        return Held(tuple(anchors), frozenset(keywords), frozenset(leads))

    def anchors(self, fd: int, base: int, offs: list[bytes], texts: list[bytes]) -> list[tuple[int, bytes]]:
        """Where the anchors still looked for begin in a line whose ``texts`` were found at
        ``offs`` (from ``base`` in the file ``fd``; within one, or in one and past it), in order,
        and which they are."""
        found: set[tuple[int, bytes]] = set()
        retired = self.sc.retired
        for off, t in zip(offs, texts, strict=True):
            o = base + int(off)
            info = self.text(t)
            for a in info.anchors:
                j = t.find(a) if a not in retired else -1
                while j >= 0:
                    found.add((o + j, a))
                    j = t.find(a, j + 1)
            maybe = [(a, j) for j, node in info.begins for kind, a in _ends(node) if kind == ANCHOR]
            maybe = [(a, j) for a, j in maybe if a not in retired]
            if maybe:
                near = os.pread(fd, max(j + len(a) for a, j in maybe), o)
                found.update((o + j, a) for a, j in maybe if near.startswith(a, j))
        return sorted(found)


class Held(NamedTuple):
    """The anchors, keywords and leads (lowercased) that a line holds around a found text."""

    anchors: tuple[bytes, ...]
    keywords: frozenset[bytes]
    leads: frozenset[str]


class Found(NamedTuple):
    """What a text that grep found tells (``GrepLiterals.text``): the anchors and the keywords within
    it, the leads (lowercased) within it, and where in it (lowercased) a longer literal may
    begin: the place and the trie node that the rest of the text leads to."""

    anchors: tuple[bytes, ...]
    keywords: frozenset[bytes]
    leads: frozenset[str]
    begins: tuple[tuple[int, _Node], ...]


def _ends(node: _Node) -> Iterator[tuple[int, bytes]]:
    """Every literal that ends in the trie below ``node``."""
    for sub in node[0].values():
        yield from sub[1]
        yield from _ends(sub)


def leads(sigs: tuple[Signature, ...]) -> tuple[bytes, ...]:
    """Every literal a gate of ``sigs`` may look for (``combine.gate_literals``: ASCII,
    lowercased)."""
    found: dict[bytes, None] = {}
    for sig in sigs:
        literals = combine.gate_literals(sig.pattern)
        if literals is not None:
            found.update(dict.fromkeys(lead.encode() for lead in sorted(literals[0])))
    return tuple(found)
