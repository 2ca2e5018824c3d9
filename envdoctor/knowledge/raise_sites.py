"""The raise-site index of the stack's packages (rules/knowledge/raises/, derived from the packages'
git histories at their releases by scripts/derive_raise_sites.py): per package, the messages of its
``raise X("…")`` and ``assert …, "…"`` statements as templates (literal parts and wildcards), with
the file, the qualified function, the exception type and the releases whose code has that raise;
for a raise gone from every later release while its function stays, the first release without it
and the commit that removed it.

Triage asks it who raised a message that a log shows without the frame that raised it (a one-line
paste, a cut log): ``locate``. Every package's file is read on the first question only (lazily;
the static check never asks). Matching is linear in the message (ordered substring search of the
template's literal parts, no regular expression built from them), bounded in the message's length
and in the candidates kept; a message many packages raise alike is pinned on none. Quotes are soft
(``knowledge.quotes``): templates and messages are matched as their words read without them, so
that a paste whose page ate a name's backticks or typeset its quotes meets its raise; a quote
closing a template does not let its last word run on (``edges``), and quotes count for nothing
in the characters a message must show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor.knowledge.quotes import name_char, quoted_parts, soft_marked, soft_template, softened

SCHEMA = "envdoctor.raises/1"
MAX_BYTES = 4 * 1024 * 1024  # a file larger than this is passed over
WILD = "\x00"
MAX_MESSAGE = 2000  # characters of a message looked at
MIN_MATCHED = 20  # literal characters of a template a message must show
MIN_CUT = 12  # characters of a literal part a cut message must end with
MAX_HITS = 8  # sites kept per message
MAX_CANDIDATES = 200  # sites of one package tried per message (a hostile message holding every anchor)
#: messages of resources and the machine that many programs print alike: pinned on no package
_GENERIC = re.compile(
    r"(?i)out of memory|\bCUDA error\b|\bNCCL\b|illegal memory access|device-side assert|timed? ?out\b|"
    r"connection (?:refused|reset)|no such file or directory|not enough memory|killed by signal|"
    # Python's own messages and the lazy-import wrapper that libraries copy from one another
    r"has no attribute|because of the following error|unexpected keyword argument|"
    r"required positional argument|object is not (?:subscriptable|iterable|callable)|"
    # the interpreter's own messages, which a library's raise may copy word for word
    # (transformers' ``raise IndexError("list index out of range")``)
    r"\b(?:list|tuple|string|array) index out of range|\bdivision by zero|maximum recursion depth|"
    r"values to unpack|unhashable type|unsupported operand type|can only concatenate|"
    r"\bhas no len\(\)|not supported between instances of|cannot unpack non-iterable|"
    r"does not support item assignment|argument of type '[^']{1,100}' is not iterable|"
    # transformers' lazy-import wrapper: it reports another failure (the import of what it names)
    r"Are this object's requirements defined correctly"
)


@dataclass(frozen=True)
class Lift:
    """The first release without a raise, and the commit that removed it ("" where none is known)."""

    release: str
    commit: str
    title: str
    number: str
    lifts: bool  # the commit's message says it fixes, supports or removes what the raise refused
    source: str  # owner/name of the repository

    @property
    def url(self) -> str:
        """The public address of the commit (its PR's where it names one)."""
        if not self.source:
            return ""
        if self.number:
            return f"https://github.com/{self.source}/pull/{self.number}"
        return f"https://github.com/{self.source}/commit/{self.commit}" if self.commit else ""


@dataclass(frozen=True)
class Site:
    """A raise of ``package``: ``exc`` raised with ``template`` in ``function`` of ``module``."""

    package: str
    module: str
    function: str  # qualified ("" at module level)
    exc: str
    template: str
    releases: tuple[str, ...]  # the releases whose code has it, oldest first
    first_indexed: bool  # present in the oldest release indexed (its start is not known)
    added: bool  # it came into a function the release before already had
    lifted: Lift | None
    #: the names of the values formatted at the template's wildcards, in order (``()`` where the
    #: index does not know them): "tensor parallel size (\x00)" formats ``tensor_parallel_size``
    names: tuple[str, ...] = ()

    @property
    def first(self) -> str:
        return self.releases[0]

    @property
    def last(self) -> str:
        return self.releases[-1]

    def where(self) -> str:
        return f"{self.module}" + (f" in {self.function}" if self.function else "")

    def named_at(self, words: str) -> str:
        """The name of the value formatted right after ``words`` in the template ("tensor parallel
        size (" -> ``tensor_parallel_size``), or of the value the words are ("" where unknown)."""
        parts = self.template.split(WILD)
        low = words.lower().strip()
        if not low or not self.names:
            return ""
        for i, part in enumerate(parts[:-1]):
            if i < len(self.names) and low in part.lower():
                return self.names[i]
        return ""


@dataclass(frozen=True)
class Hit:
    site: Site
    matched: int  # literal characters of the template the message shows
    complete: bool  # the message shows the whole template (not cut)


def squeeze(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Soft:
    """What a template's quotes were, where ``quotes.soft`` dropped them (``fit``): its first /
    last literal part is a whole word at the template's edge (``head`` / ``tail``); the parts that
    a quote opened after a wildcard (``after``); where the message's own quotes stood (``marks``:
    indices in the soft message)."""

    head: bool = False
    tail: bool = False
    after: tuple[int, ...] = ()
    marks: frozenset[int] = frozenset()


_PLAIN = Soft()


def _find(message: str, part: str, pos: int, i: int, last: int, quoted: Soft, lead: bool) -> int:
    """Where ``part`` (the ``i``-th literal part) is in ``message`` from ``pos``, as the quotes the
    template had there ask (``Soft``): a whole word at the template's edge; after a wildcard that
    a quote closed (``'{x}' is not``), the quote shown there or, where it is not, the value one
    word (after a leading wildcard, which any text may precede: the part ``MIN_MATCHED`` long)."""
    at = message.find(part, pos)
    while at >= 0:
        if quoted.head and i == 0 and at > 0 and name_char(message[at - 1]):
            pass  # the name a quote opened runs on before it
        elif quoted.tail and i == last and name_char(message[at + len(part) : at + len(part) + 1]):
            pass  # the name a quote closed runs on after it
        elif i not in quoted.after or at in quoted.marks:
            return at  # no quote there, or the message shows one
        elif len(part.strip()) >= MIN_MATCHED if lead else " " not in message[pos:at].strip():
            return at
        at = message.find(part, at + 1)
    return at


def fit(template: str, message: str, quoted: Soft = _PLAIN) -> tuple[int, bool] | None:
    """How ``message`` shows ``template``: (literal characters matched, whether whole), or None.

    The literal parts must appear in order (a wildcard stands for any text; text may precede the
    first part and follow the last); a message cut off may end inside a literal part (its last
    ``MIN_CUT`` characters at least the part's start; not the first part after a leading wildcard)
    or end the template early. ``quoted``: where the template's quotes were, both being soft
    (``_find``)."""
    pos = 0
    matched = 0
    parts = template.split(WILD)
    last = len(parts) - 1
    for i, part in enumerate(parts):
        if not part:
            continue
        at = _find(message, part, pos, i, last, quoted, not matched and not parts[0])
        if at >= 0:
            matched += len(part)
            pos = at + len(part)
            continue
        # the message ends inside this part: its tail is the part's start
        rest = message[pos:]
        k = min(len(part), len(rest))
        while k >= MIN_CUT and not rest.endswith(part[:k]):
            k -= 1
        if k >= MIN_CUT and (matched or parts[0]):
            # (a template that opens with a wildcard and a message that ends inside its first
            # literal part show neither the template's start nor a whole part of it: any message
            # ending in the same common words, "… initialization failed", would fit)
            return matched + k, False
        if i > 0 and matched and len(part) <= 2:
            if rest.strip() == "":
                return matched, False
            shown = next((j for j in range(len(part) - 1, 0, -1) if rest.rstrip().endswith(part[:j])), 0)
            if shown:  # a short closing part (").") the message shows the start of, after the last value:
                # whole where only the sentence's final stop is missing (a paste that dropped it)
                return matched + shown, i == len(parts) - 1 and part[shown:] in (".", "!", "?")
        return None
    return matched, True


class RaiseIndex:
    def __init__(self, package: str, doc: dict[str, Any]) -> None:
        self.package = package
        self.source = str(doc.get("source") or "")
        self.releases = [str(r) for r in doc.get("releases") or []]
        self.modules = [str(m) for m in doc.get("modules") or []]
        self.rows = [r for r in doc.get("sites") or [] if isinstance(r, list) and len(r) >= 5]
        lifted = doc.get("lifted")
        self.lifted = lifted if isinstance(lifted, dict) else {}
        #: per site whose template has quotes (or markup), the template with them soft
        #: (``quotes.soft_template``); the others are matched as they are
        self.soft: dict[int, str] = {}
        self._quoted: dict[int, Soft] = {}  # where their quotes were (``quoted``), once asked
        #: (the longest literal part, the first literal part's first ``MIN_CUT`` characters, row
        #: index) per site, of the soft template: a message holds the first, or (cut) the second
        self.anchors: list[tuple[str, str, int]] = []
        for i, row in enumerate(self.rows):
            template = str(row[1])
            if softened(template):
                template = self.soft[i] = soft_template(template)
            parts = [p for p in template.split(WILD) if p]
            if parts:
                self.anchors.append((max(parts, key=len), parts[0][:MIN_CUT].rstrip(), i))

    def site(self, i: int) -> Site | None:
        try:
            exc, tpl, mod, fn, runs = self.rows[i][:5]
            added = bool(self.rows[i][5]) if len(self.rows[i]) > 5 else False
            idx = sorted({r for lo, hi in runs for r in range(int(lo), int(hi) + 1)})
            shown = tuple(self.releases[r] for r in idx if 0 <= r < len(self.releases))
            module = self.modules[int(mod)]
        except (TypeError, ValueError, IndexError):
            return None
        if not shown:
            return None
        lift = None
        raw = self.lifted.get(str(i))
        if isinstance(raw, list) and len(raw) >= 5:
            rel, sha, title, number, says = raw[:5]
            lift = Lift(str(rel), str(sha), str(title), str(number), bool(says), self.source)
        raw_names = self.rows[i][6] if len(self.rows[i]) > 6 else None
        names = tuple(str(x) for x in raw_names) if isinstance(raw_names, list) else ()
        return Site(self.package, module, str(fn), str(exc), str(tpl), shown, idx[0] == 0, added, lift, names)

    def quoted(self, i: int) -> Soft:
        """Where the quotes of site ``i``'s template were (``Soft``; none: ``_PLAIN``)."""
        if i not in self.soft:
            return _PLAIN
        got = self._quoted.get(i)
        if got is None:
            head, tail, after = quoted_parts(str(self.rows[i][1]), WILD)
            got = self._quoted[i] = Soft(head, tail, after) if head or tail or after else _PLAIN
        return got

    def copies_before(self, template: str, exc: str, release: str) -> bool:
        """Whether another site raises ``template`` with one word changed (the class or model it
        names: transformers' ``# Copied from`` checks, one per model) in a release before
        ``release``: the check is older than that release, copied from one class to the next."""
        words = template.split()
        if release not in self.releases or len(words) < 4:
            return False
        before = self.releases.index(release)
        for i, row in enumerate(self.rows):
            other = str(row[1]).split()
            if str(row[0]) != exc or len(other) != len(words) or other == words:
                continue
            if sum(a != b for a, b in zip(other, words, strict=True)) != 1:
                continue
            site = self.site(i)
            if site is not None and self.releases.index(site.first) < before:
                return True
        return False

    def candidates(self, message: str) -> list[int]:
        """Sites whose longest literal part the message holds, or (a cut message) whose first
        part's start it holds."""
        out = [
            i
            for anchor, head, i in self.anchors
            if anchor in message or (len(head) >= MIN_CUT and head in message)
        ]
        return out[:MAX_CANDIDATES]


def _dir() -> Any:
    from envdoctor.resources import rules_dir

    return rules_dir() / "knowledge" / "raises"


@lru_cache(maxsize=64)  # every package is read for one message: all of them stay
def raise_index(package: str) -> RaiseIndex | None:
    """The raise-site index of ``package`` (a distribution name), or None where envdoctor has none."""
    from envdoctor.knowledge.gzip_json import load

    doc = load(_dir() / f"{package}.json.gz", SCHEMA, MAX_BYTES)
    return None if doc is None else RaiseIndex(str(doc.get("package") or package), doc)


@lru_cache(maxsize=1)
def packages() -> tuple[str, ...]:
    """The packages envdoctor has a raise-site index of."""
    from envdoctor.knowledge.gzip_json import names

    return names(_dir())


def generic(message: str) -> bool:
    """A message of resources or the machine that many programs print alike."""
    return bool(_GENERIC.search(message))


@lru_cache(maxsize=64)  # several answers ask about one failing message
def _located(message: str, exc: str, only: tuple[str, ...], indexes: tuple[Any, ...]) -> tuple[Hit, ...]:
    return tuple(_locate(message, exc, only))


def locate(message: str, exc: str = "", only: tuple[str, ...] = ()) -> list[Hit]:
    """``_locate``, remembered for the last messages asked about (with the indexes it read: a
    reloaded index is asked again)."""
    indexes = tuple(raise_index(d) for d in only or packages())
    return list(_located(message[:MAX_MESSAGE], exc, tuple(only), indexes))


def _locate(message: str, exc: str = "", only: tuple[str, ...] = ()) -> list[Hit]:
    """The raise sites that print ``message`` (an exception's message as the log shows it, maybe
    cut, wrapped or quoted in other text), best first: those of the log's exception type ``exc``
    when any is, the ones that show most of their template; empty where the message is generic
    (``generic``) or too short to tell a raise apart. ``only``: these packages' indexes alone."""
    text = squeeze(message[:MAX_MESSAGE])
    words, marks = soft_marked(text)  # as the soft templates: quotes count for nothing
    if len(words) < MIN_MATCHED or generic(text):
        return []
    hits: list[Hit] = []
    for dist in only or packages():
        index = raise_index(dist)
        if index is None:
            continue
        for i in index.candidates(words):
            template, quoted = index.soft.get(i) or str(index.rows[i][1]), index.quoted(i)
            if quoted.after:
                quoted = Soft(quoted.head, quoted.tail, quoted.after, marks)
            got = fit(template, words, quoted)
            if got is None or got[0] < MIN_MATCHED:
                continue
            site = index.site(i)
            if site is not None:
                hits.append(Hit(site, got[0], got[1]))
    if text.endswith((".", "!", "?", ")", "]", "'", '"', "`")):
        hits = [h for h in hits if h.complete]  # a message that ends its sentence is not cut off
    if exc and any(h.site.exc == exc for h in hits):
        hits = [h for h in hits if h.site.exc == exc]
    if not hits:
        return []
    best = max(h.matched for h in hits)
    hits = [h for h in hits if h.matched >= best - 4]  # the longest fits; a shorter one is another message
    hits.sort(key=lambda h: (-h.matched, not h.complete, h.site.package, h.site.module, h.site.function))
    return hits[:MAX_HITS]
