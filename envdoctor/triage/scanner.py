"""One streaming pass over a log of any size: the lines that match a failure signature.

The log is read in binary chunks. A few literal anchors (``rules/triage/signatures.yaml``) are found
with ``bytes.find`` over whole blocks (C speed); only a line holding one is looked at further: the
signatures whose keywords it holds are tried on at most ``2 * WINDOW`` bytes of it, decoded
(``errors="replace"``), cleaned of ANSI colours, split at tqdm's carriage returns and stripped of
rank and logger prefixes. The patterns are linear-time (checked when the signatures load), so the
whole pass is linear in the log's size whatever its lines hold. Memory stays bounded whatever the
log's size: the matches (at most ``KEEP_PER_SIGNATURE`` each), and the last ``HISTORY`` bytes as
a ring buffer from which the lines before a match are taken as its context. Line numbers count
``\\n`` as editors do.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import BinaryIO, NamedTuple

from envdoctor.knowledge.quotes import ascii_quotes
from envdoctor.redact import cut as redacted_cut
from envdoctor.triage.combine import Gate, Literals, digit_guards
from envdoctor.triage.interface import HEAD, Match, ScanResult, Signature
from envdoctor.triage.signatures import anchors, signatures

CHUNK = 4 * 1024 * 1024
HISTORY = 64 * 1024  # bytes kept before the current chunk (the context ring buffer)
MAX_LINE = 1024 * 1024  # a line longer than this is cut into pieces
WINDOW = 4 * 1024  # bytes either side of an anchor that are examined (8 KiB of a line at most)
CONTEXT_LINES = 40
KEEP_PER_SIGNATURE = 50  # matches kept per signature (later lines with its keyword are counted)
CONTEXT_PER_SIGNATURE = 3  # matches per signature that keep their context

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
#: pytest's short test summary line before the exception it reports (``-rfE``, xdist's ``[gw0]``)
_PYTEST = (
    # (the node id: one word that names a test file or a test; linear, no nested quantifier)
    r"(?:\[gw\d{1,4}\] {1,4})?(?:FAILED|ERROR) (?=\S{0,1500}?(?:\.py\b|::))\S{1,1500}"
    r" - (?=[A-Za-z_][\w.]{0,200}(?::|$))"
)
_PYTEST_SUMMARY = re.compile(rf"\s*{_PYTEST}")
#: pytest's mark of a message it cut to the terminal's width
_PYTEST_CUT = "..."
#: Prefixes that launchers and loggers put before a line; the named groups carry the rank.
_PREFIXES = (
    r"\[(?:rank|Rank |RANK )(?P<torch>\d+)\]:?"  # torch elastic: [rank3]:
    r"|\[[A-Za-z_]+(?P<role>\d+)\]:"  # torchrun --tee / log prefix template: [default0]:
    r"|[Rr]ank ?(?P<plain>\d+):"  # rank 1:
    r"|\[\d+,(?P<mpi>\d+)\]<std(?:out|err)>:"  # mpirun --tag-output
    r"|(?P<srun>\d{1,4}): (?=\S)"  # srun --label
    r"|\[[A-Za-z_][\w.-]{0,30}\]:(?=[ \t])"  # a named process's tag: "[vllm]: [rank0]: …"
    # vLLM processes: (EngineCore_DP0 pid=7); Ray actors: (RayWorkerWrapper pid=41, ip=10.0.0.2),
    # (MegatronPolicyWorker[rank=8] pid=32, ip=…), (pid=41, ip=…)
    r"|\((?:[\w.-]{1,100}(?:\[rank=\d{1,6}\])? )?(?:pid|rank)=\d+(?:,? \w{1,30}=[\w.:-]{1,100}){0,8}\)"
    r"|(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d [\d:.]+ (?:\[[^\]]*\]|[\w.]{1,100}:\d{1,6}\])"  # vLLM
    r"|[\w.-]{1,64}[-_]\d{1,4} {1,8}\| "  # docker compose: "vllm-1  | "
    r"|\[[EWIF]\d{4} [\d:.]+ [^\]]*\]"  # glog: [E1218 20:27:21.433 ProcessGroupNCCL.cpp:629]
    r"|>{1,8}(?=[ \t])"  # quoted in an e-mail or a markdown reply: "> ValueError: …"
    r"|E {3,40}(?=\S)"  # pytest's report of the failure: "E   ModuleNotFoundError: …"
    # pytest's short test summary: "FAILED tests/t.py::test_x - ValueError: …", "[gw0] ERROR …"
    # (the test's node id is no frame; an exception's name and a colon follow the " - ")
    rf"|{_PYTEST}"
    # markdown's bold or code around an exception's line: "**RuntimeError: …**", "`ValueError: …`"
    r"|(?:\*\*|`{1,3})(?=(?:[A-Za-z_]\w{0,100}\.){0,8}[A-Z]\w{0,100}(?:Error|Exception)\b)"
)
_BAR = r"|[^|\r\n]{0,200}?\d{1,3}%\|[^|]{0,400}\|[^\]\n]{0,200}\]"  # a tqdm bar the line was printed after
PREFIX = re.compile(rf"\s*(?:{_PREFIXES}{_BAR})[ \t]*")
#: the same without the tqdm bar, the last alternative, for a line without "%|" (where it cannot
#: match): its lazy look for a percentage was most of the cost of a line without a prefix
_PREFIX_NO_BAR = re.compile(rf"\s*(?:{_PREFIXES})[ \t]*")
#: what a prefix other than docker compose's (which holds "| ") or a tqdm bar (which holds "%|")
#: starts with, after white space; or a decimal digit (srun's label)
_PREFIX_FIRST = frozenset("[Rr(EWIDCF>*`")
INNER_RANK = re.compile(r"\bRank (\d+)\]")  # ProcessGroupNCCL: "[PG 0 Rank 3] Watchdog …"


def hint_anchors(sigs: tuple[Signature, ...], anchor_list: tuple[bytes, ...]) -> dict[bytes, list[Signature]]:
    """The anchors that only hints' keywords hold (looked for until those hints matched)."""
    found = {a: [s for s in sigs if any(a in kw for kw in s.keywords)] for a in anchor_list}
    return {a: f for a, f in found.items() if f and all(s.hint for s in f)}


def once(sigs: tuple[Signature, ...], anchor_list: tuple[bytes, ...]) -> set[str]:
    """Hints found only through such anchors: after their first match they are neither matched
    nor counted again (so every scan, block, prefilter or by ranges, agrees where they stop)."""
    own = hint_anchors(sigs, anchor_list)
    return {
        s.id for s in sigs if s.hint and keep(s) == 1 and all(any(a in kw for a in own) for kw in s.keywords)
    }


def keep(sig: Signature) -> int:
    """Matches kept of ``sig``: a hint informs the diagnosis by its first line only (vLLM's
    engine-start lines recur in every log of a colocated run: decoding each one would cost), unless
    it says how many it keeps (the package versions a log lists)."""
    return sig.keep or (1 if sig.hint else KEEP_PER_SIGNATURE)


#: the HTML entities a log copied from a web page's source keeps (``File &quot;/a.py&quot;``,
#: ``&#39;vllm&#39;``, ``&lt;module&gt;``): a fixed few, so no entity can put a control character
#: in the text (``&#27;`` stays as it is)
_ENTITIES = {"&quot;": '"', "&#34;": '"', "&#39;": "'", "&#x27;": "'", "&apos;": "'", "&lt;": "<"}
_ENTITIES |= {"&gt;": ">", "&#96;": "`", "&amp;": "&"}
_ENTITY = re.compile("|".join(map(re.escape, _ENTITIES)))


def unescape(text: str) -> str:
    """``text`` with the HTML entities of ``_ENTITIES`` read back (one pass: ``&amp;lt;`` is ``&lt;``)."""
    return _ENTITY.sub(lambda m: _ENTITIES[m.group(0)], text) if "&" in text and ";" in text else text


#: a pasted line wrapped whole in markdown's bold or code marks, after its quote markers:
#: ``**TypeError: …**``, ``> `File "/a.py", line 3, in f` ``, ``__ValueError: …__``
_WRAPPED = re.compile(
    r"^(?P<lead>(?:>\s?){0,8}\s{0,40})(?P<mark>\*\*|__|`{1,3})(?P<inner>\S.{0,8000}?)(?P=mark)$"
)
#: the HTML tags a paste from an issue's page keeps at a line's start or end (``<details>``,
#: ``<summary>Traceback</summary>``, ``<pre>``, ``<code>``); never ``<module>`` nor ``<lambda>``
_TAG = r"</?(?:details|summary|pre|code|p|br|b|strong|em|i|tt|kbd|blockquote|samp)\b[^<>\n]{0,80}/?>"
_TAGS_HEAD = re.compile(rf"(?:\s{{0,40}}{_TAG})+")
_ONE_TAG = re.compile(_TAG)
#: a frame's path as markdown left it: ``File "…\**transformers\utils\deprecation.py**", line 165``
_FRAME_PATH = re.compile(r'(?P<pre>File ")(?P<path>[^"\n]{1,1000})(?P<post>", line \d)')
_DUNDER_FILE = re.compile(r"\*\*(\w{1,100})\*\*(?=\.py\b)")  # ``**init**.py``: ``__init__.py`` rendered


def unmark(text: str) -> str:
    """A pasted line read as if unquoted: the HTML tags around it (``<details>``, ``<pre>``), the
    markdown bold or code marks that wrap it whole (``**…**``, ``__…__``, ``` `…` ```; not a
    dunder name alone, ``__init__``), and emphasis inside a frame's path (``**pkg\\mod.py**``:
    no path holds ``*`` or a backtick) removed; quote markers (``> ``) are left to the prefix
    reader. Cheap where there is nothing to remove: the line's last character or a frame's
    marks tell."""
    if text[:1] == "<":
        head = _TAGS_HEAD.match(text)
        text = text[head.end() :].strip() if head else text
    while text[-1:] == ">":  # a tag at a time from the end: no search along the line
        start = text.rfind("<", max(0, len(text) - 100))
        if start < 0 or not _ONE_TAG.fullmatch(text, start):
            break
        text = text[:start].rstrip()
    if text[-1:] in ("*", "_", "`"):
        m = _WRAPPED.match(text)
        if m is not None and not (m.group("mark") == "__" and m.group("inner").isidentifier()):
            inner = m.group("inner")
            if m.group("mark") not in inner:
                text = m.group("lead") + inner.strip()
    if ("*" in text or "`" in text) and 'File "' in text:
        m = _FRAME_PATH.search(text)
        if m is not None and ("*" in m.group("path") or "`" in m.group("path")):
            path = _DUNDER_FILE.sub(r"__\1__", m.group("path")).replace("*", "").replace("`", "")
            text = text[: m.start("path")] + path.strip() + text[m.end("path") :]
    return text


def clean(raw: bytes) -> str:
    """A piece of a log line as a person reads it: decoded, colours and control noise removed,
    HTML entities read back, typographic quotes as ASCII's (``quotes.ascii_quotes``: what the
    catalogue's quote-soft patterns know), markdown's and HTML's marks around it taken off
    (``unmark``)."""
    text = raw.decode("utf-8", errors="replace")
    text = ANSI.sub("", text) if "\x1b" in text else text  # every escape starts with ESC
    return unmark(ascii_quotes(unescape(text)).strip())


_SPACES = re.compile(r"\s+")


def squeeze(text: str) -> str:
    """A message as its words read, for matching: NFKC-normalised (full-width punctuation, odd
    spaces), every run of whitespace one space — a pasted log whose line wrap became a run of
    spaces or a newline inside the message (``must be evenly divisible      by the number``)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return _SPACES.sub(" ", text).strip()


def _indent(raw: bytes) -> str:
    """The leading spaces and tabs of a raw line (at most 40: indentation, not padding)."""
    n = len(raw) - len(raw.lstrip(b" \t"))
    return raw[: min(n, 40)].decode("ascii", errors="replace").replace("\t", "    ")


def split_prefix(text: str) -> tuple[str, int | None]:
    """``text`` without its launcher/logger prefixes, and the rank they name (if any)."""
    rank = None
    for _ in range(6):
        if "|" not in text:  # no docker compose prefix nor tqdm bar: the first character tells
            first = text.lstrip()[:1]
            if first not in _PREFIX_FIRST and not first.isdecimal():
                break
        m = (PREFIX if "%|" in text else _PREFIX_NO_BAR).match(text)
        if not m or not m.group(0):
            break
        if rank is None:
            digits = next((g for g in m.groups() if g is not None), None)
            rank = int(digits) if digits is not None else None
        summary = text.endswith(_PYTEST_CUT) and _PYTEST_SUMMARY.match(text) is not None
        text = text[m.end() :]
        if summary:
            text = text[: -len(_PYTEST_CUT)].rstrip()  # cut by pytest: the message goes on
    if rank is None:
        inner = INNER_RANK.search(text) if "Rank " in text else None
        rank = int(inner.group(1)) if inner else None
    return text, rank


def _visible(data: bytes) -> Iterator[bytes]:
    """Each line as a terminal leaves it: the last of its carriage-return redraws (tqdm)."""
    for line in data.split(b"\n"):
        pieces = [p for p in line.split(b"\r") if p.strip()]
        if pieces:
            yield pieces[-1]


_ENDS = b"\n\r"
#: lower case letters and the space, the most common first (English text, log words)
_COMMON = b" etaoinsrhldcumfpgwybvkxjqz"


def _commonness(b: bytes) -> int:
    """How common the byte ``b`` is in text, roughly: upper case letters least (-2), other
    bytes (digits, punctuation) next (-1), then the lower case letters by their frequency."""
    i = _COMMON.find(b)
    return len(_COMMON) - i if i >= 0 else (-2 if b.isupper() else -1)


#: a block at least this big has the bytes of the anchors looked for first (``Matcher._present``)
_PRESENT_MIN = 256 * 1024
_DIGITS = re.compile(rb"[0-9]")
_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)  # every digit as 0: a line's digit shape


class Matcher:
    """The lines of a log matched against the signatures, found by the block scan here or by the
    prefilter (``prefilter.py``); holds the result, the per-signature limits and the caches."""

    def __init__(self, sigs: tuple[Signature, ...], anchor_list: tuple[bytes, ...]) -> None:
        self.sigs = sigs
        self.anchors = anchor_list
        by_kw: dict[bytes, list[Signature]] = {}
        for sig in sigs:
            for kw in sig.keywords:
                by_kw.setdefault(kw, []).append(sig)
        #: the signatures a line's keywords name, in this order (longest keyword first; those
        #: with digits last): the order of its matches
        by_keyword = sorted(by_kw.items(), key=lambda kv: len(kv[0]), reverse=True)
        self.by_keyword = [(k, v) for k, v in by_keyword if not _DIGITS.search(k)] + [
            (k, v) for k, v in by_keyword if _DIGITS.search(k)
        ]
        self.keywords: Literals[bytes] = Literals(by_kw)
        #: keywords held -> what to do with such a line while ``epoch`` stays the same
        self.plans: dict[frozenset[bytes], Plan] = {}
        self.epoch = 0  # bumped when a signature is kept enough or a hint is done
        self.gates: dict[tuple[int, ...], Gate] = {}
        self.searches = 0  # regex searches made on lines for their signatures (tests count them)
        #: digit shape of a line -> its outcome, for the lines that differ from it in digit values
        self.shapes: dict[bytes, Shape] = {}
        self.once_seen: set[bytes] = set()  # digit shapes seen once
        self.guards: dict[int, tuple[bytes, ...] | None] = {}  # id(sig) -> its digit guards
        #: (keywords held, epoch) of a plan -> the digit guards of its open signatures
        self.open_guards: dict[tuple[frozenset[bytes], int], tuple[bytes, ...] | None] = {}
        self.zeroed: dict[bytes, bytes] = {}  # digit guard -> its digits as 0
        self.guard_unions = 0  # digit guards of a plan's open signatures put together (tests count)
        self.digit_keywords = tuple((k, k.translate(_ZERO)) for k, _ in by_keyword if _DIGITS.search(k))
        #: the digit guards of a plan's open signatures and the digit keywords, digits as 0: which
        #: of them a digit shape holds, found in one pass (``in`` each: ~1 µs apiece); per guards
        self.zeroed_literals: dict[tuple[bytes, ...], ShapeLiterals] = {}
        self.longest = max(len(a) for a in anchor_list)
        #: each anchor's bytes, and the rarest byte of each (``_present``)
        self.bytes_of = {a: frozenset(a[i : i + 1] for i in range(len(a))) for a in anchor_list}
        self.rare_bytes = tuple(sorted({min(sorted(b), key=_commonness) for b in self.bytes_of.values()}))
        self.hint_anchors = hint_anchors(sigs, anchor_list)
        self.retired: set[bytes] = set()  # such anchors, once their hints matched
        self.once = once(sigs, anchor_list)
        self.done: set[str] = set()  # the ``once`` hints that have matched
        self.result = ScanResult()
        self.full = 0  # lines whose keywords were looked for (neither a known text nor a known shape)
        self.unmatched: set[bytes] = set()  # lines that matched none of them
        self.line_base = 0  # newlines before the current block
        self.buf_offset = 0  # where the current block's buffer starts in the file
        self.last_line_done = -1

    def _retire(self) -> None:
        """Stop looking for the anchors whose hints have all matched."""
        done = {a for a, found in self.hint_anchors.items() if all(s.id in self.done for s in found)}
        if done - self.retired:
            self.retired |= done
            self.anchors = tuple(a for a in self.anchors if a not in self.retired)

    def block(self, buf: bytes, lo: int, cut: int) -> None:
        """Match the lines with an anchor that starts in ``buf[lo:cut]``; count its newlines.

        Each anchor is searched with ``bytes.find`` over the whole block; after a hit the search
        goes on at the end of that line's segment, so a line full of anchors costs one look.
        When a hint retires anchors, the rest of the block is searched again without them (as
        the prefilter skips their hits from then on).
        """
        if self._rest_of_a_matched_line(buf, lo, cut):
            return  # every anchor here would be skipped below (and no newline is counted)
        pos, newlines, find_from = lo, 0, lo
        while True:
            retired = len(self.retired)
            starts = self._starts(buf, find_from, cut)
            for s in sorted(starts):
                if s > pos:
                    newlines += buf.count(b"\n", pos, s)
                    pos = s
                line_no = self.line_base + newlines + 1
                if s < lo and line_no == self.last_line_done:
                    continue  # the rest of a cut line already matched
                if self._segment(buf, s, starts[s], line_no):
                    self.last_line_done = line_no
                if len(self.retired) != retired:
                    find_from = segment_end(buf, starts[s])
                    break
            else:
                break
        self.line_base += newlines + buf.count(b"\n", max(pos, lo), cut)

    def _rest_of_a_matched_line(self, buf: bytes, lo: int, cut: int) -> bool:
        """Whether ``buf[lo:cut]`` is all within a line cut before ``lo`` that has matched: a
        line longer than ``MAX_LINE`` is scanned a block at a time, and once it matched, its
        anchors in later blocks are skipped; so is looking for them (34 passes of ``bytes.find``
        a block: most of a 1 GiB line's time)."""
        return (
            self.last_line_done == self.line_base + 1
            and lo > 0
            and buf[lo - 1] not in _ENDS
            and buf.find(b"\n", lo, cut) < 0
            and buf.find(b"\r", lo, cut) < 0
        )

    def _present(self, buf: bytes, lo: int, end: int) -> tuple[bytes, ...]:
        """The anchors that may occur in ``buf[lo:end]``, a big block: not those whose rarest
        byte it lacks (a ``bytes.find`` of one byte runs at memory speed, one of an anchor 5 to
        20 times slower on text that holds its letters; one pass a rarest byte, ~20, not one
        a byte of any anchor)."""
        if end - lo < _PRESENT_MIN:
            return self.anchors
        absent = {c for c in self.rare_bytes if buf.find(c, lo, end) < 0}
        if not absent:
            return self.anchors
        return tuple(kw for kw in self.anchors if not absent & self.bytes_of[kw])

    def _starts(self, buf: bytes, lo: int, cut: int) -> dict[int, int]:
        """Segment start -> the first anchor position in it, for anchors from ``lo``."""
        starts: dict[int, int] = {}
        for kw in self._present(buf, lo, min(len(buf), cut + self.longest - 1)):
            end = min(len(buf), cut + len(kw) - 1)
            i = buf.find(kw, lo, end)
            while i >= 0:
                s = segment_start(buf, i)
                if i < starts.get(s, i + 1):
                    starts[s] = i
                stop = buf.find(b"\n", i, end)
                cr = buf.find(b"\r", i, stop if stop >= 0 else end)
                stop = cr if cr >= 0 else stop
                if stop < 0:
                    break
                i = buf.find(kw, stop, end)
        return starts

    def _segment(self, buf: bytes, s: int, hit: int, line_no: int) -> bool:
        e = segment_end(buf, hit)
        raw = buf[max(s, hit - WINDOW) : min(e, hit + WINDOW)]
        # the bytes before are cut when they do not start the file (as the prefilter has it)
        cut = self.buf_offset + max(0, s - HISTORY) > 0
        return self.match(raw, line_no, lambda: buf[max(0, s - HISTORY) : s], cut)

    def match(
        self,
        raw: bytes,
        line_no: int,
        before: Callable[[], bytes],
        cut: bool,
        held: frozenset[bytes] | None = None,
        leads: frozenset[str] | None = None,
    ) -> bool:
        """Match the piece ``raw`` of line ``line_no`` (at most ``2 * WINDOW`` bytes around its
        anchor); ``before()``: the bytes before its segment (at most ``HISTORY``), ``cut`` when
        their first line is incomplete. ``held``: the keywords ``raw`` holds and ``leads``: gate
        leads (lowercased) that ``raw`` holds, all those its cleaned text holds, when the caller
        found them (GNU grep, ``prefilter.py``); else they are looked for here.

        A flood of distinct lines costs a few regex calls a line, however many signatures its
        keywords name: a line that differs from one seen in digit values only has that line's
        outcome where no open signature tells digits apart (``_shape``); any other has the
        keywords it holds found in one pass and its open signatures gated by their leading
        literals (``combine.py``); only a line that one of them matches is matched signature by
        signature."""
        if raw in self.unmatched:
            return False  # the same text matched nothing before
        key = raw.translate(_ZERO)
        shape = self.shapes.get(key)
        if shape is not None and shape.epoch == self.epoch and shape.holds(raw):
            return self._as_shape(shape, raw, line_no)
        self.full += 1
        if held is None:
            held = self.keywords.held(raw)
        plan = self.plans.get(held)
        if plan is None or plan.epoch != self.epoch:
            plan = self._plan(held)
        if not plan.sigs:
            return False
        res = self.result
        if plan.gate is None:  # kept enough of each: counted by keyword, not decoded again
            for sig in plan.sigs:
                res.counts[sig.id] += 1
                res.last_line[sig.id] = line_no
            return True
        text = clean(raw)
        body, rank = split_prefix(text)
        if body.startswith("raise "):
            self._shape(key, plan, None, rank is not None)
            return False  # a traceback's source line quoting the message, not the message
        gate = plan.gate
        calls = gate.calls
        hit = gate.hit(body, leads)
        self.searches += gate.calls - calls
        if hit:  # one of the open signatures matches: each is matched in turn
            return self._each(plan.sigs, raw, line_no, text, body, rank, before, cut)
        self._shape(key, plan, plan.kept, rank is not None)
        return self._count(raw, plan.kept, line_no, rank)

    def _count(self, raw: bytes, kept: tuple[Signature, ...], line_no: int, rank: int | None) -> bool:
        """A line that no open signature matches: counted for the signatures kept enough."""
        if not kept:
            if len(self.unmatched) >= 4096:
                self.unmatched.clear()
            self.unmatched.add(raw)
            return False
        res = self.result
        for sig in kept:
            res.counts[sig.id] += 1
            res.last_line[sig.id] = line_no
            if rank is not None:
                res.ranks.setdefault(sig.id, set()).add(rank)
        return True

    def _shape(self, key: bytes, plan: Plan, kept: tuple[Signature, ...] | None, ranked: bool) -> None:
        """Remember the outcome of a line (``kept``; None: a quoted ``raise``) for the lines of its
        digit shape ``key``, when their signatures cannot tell them apart: each open one treats
        every digit alike but where it holds a literal of ``guards`` (looked for in the line; the
        line then has no ANSI escape, which could join such a literal in the cleaned text); the
        digit keywords a line of that shape may hold are looked for too."""
        if key not in self.once_seen:  # kept from its second line on: most shapes of a flood of
            if len(self.once_seen) >= 4096:  # hex ids never come back
                self.once_seen.clear()
            self.once_seen.add(key)
            return
        guards = self._guards(plan)
        if guards is None or guards and b"\x1b" in key:
            return
        # the literals (digits as 0) that the shape holds, found in one pass: the shapes of a
        # flood of hex ids come back about once in 14 lines, and its 23 guards and 9 digit
        # keywords looked for with ``in`` one by one were half of the flood's Python time
        zero = self.zeroed
        found = self.zeroed_literals.get(guards)
        if found is None:
            if len(self.zeroed_literals) >= 256:
                self.zeroed_literals.clear()
            zeroed = [zero.get(g) or zero.setdefault(g, g.translate(_ZERO)) for g in guards]
            zeroed += [z for _, z in self.digit_keywords]
            found = self.zeroed_literals[guards] = ShapeLiterals(zeroed)
        held = found.held(key)
        maybe = tuple([k for k, z in self.digit_keywords if z in held]) if held else ()
        if len(self.shapes) >= 1024:  # at most 8 MiB of keys (a piece is at most 2 * WINDOW)
            self.shapes.clear()
        # a line of this shape can hold a guard only where the shape holds it with digits as 0
        live = tuple([g for g in guards if zero[g] in held]) if held else ()
        self.shapes[key] = Shape(self.epoch, kept, ranked, live, maybe, tuple(k in plan.held for k in maybe))

    def _as_shape(self, shape: Shape, raw: bytes, line_no: int) -> bool:
        """The outcome of a line whose digit shape's outcome is known (``_shape``)."""
        if shape.kept is None:
            return False
        rank = split_prefix(clean(raw))[1] if shape.ranked else None
        return self._count(raw, shape.kept, line_no, rank)

    def _plan(self, held: frozenset[bytes]) -> Plan:
        """What to do with a line holding the keywords ``held``, as things stand (``epoch``)."""
        plan = self.plans.get(held)
        if plan is not None and plan.epoch == self.epoch:
            return plan
        sigs: list[Signature] = []
        ids: set[int] = set()
        for kw, named in self.by_keyword:
            if kw in held:
                for sig in named:
                    if id(sig) not in ids and sig.id not in self.done:  # identity: == is slow
                        ids.add(id(sig))
                        sigs.append(sig)
        counts = self.result.counts
        kept = [sig for sig in sigs if counts.get(sig.id, 0) >= keep(sig)]
        open_ = [sig for sig in sigs if counts.get(sig.id, 0) < keep(sig)]
        gate = None
        if open_:
            key = tuple(id(sig) for sig in open_)
            gate = self.gates.get(key)
            if gate is None:
                if len(self.gates) >= 256:
                    self.gates.clear()
                gate = self.gates[key] = Gate([sig.pattern for sig in open_])
        if len(self.plans) >= 4096:
            self.plans.clear()
        plan = self.plans[held] = Plan(self.epoch, held, tuple(sigs), tuple(kept), gate)
        return plan

    def _guards(self, plan: Plan) -> tuple[bytes, ...] | None:
        """The digit guards of the open signatures of ``plan`` together (``combine.digit_guards``);
        None if one has none. Computed once for a set of open signatures (a flood asks per line)."""
        key = (plan.held, plan.epoch)  # one plan: the same open signatures
        if key not in self.open_guards:
            if len(self.open_guards) >= 4096:
                self.open_guards.clear()
            kept_ids = {id(sig) for sig in plan.kept}
            self.open_guards[key] = self._guards_of([sig for sig in plan.sigs if id(sig) not in kept_ids])
        return self.open_guards[key]

    def _guards_of(self, sigs: list[Signature]) -> tuple[bytes, ...] | None:
        """The digit guards of ``sigs`` together; None if one of them has none."""
        self.guard_unions += 1
        guards: set[bytes] = set()
        for sig in sigs:
            if id(sig) not in self.guards:
                self.guards[id(sig)] = digit_guards(sig.pattern)
            found = self.guards[id(sig)]
            if found is None:
                return None
            guards.update(found)
        return tuple(sorted(guards))

    def _each(
        self,
        sigs: tuple[Signature, ...],
        raw: bytes,
        line_no: int,
        text: str,
        body: str,
        rank: int | None,
        before: Callable[[], bytes],
        cut: bool,
    ) -> bool:
        """Match ``body`` against each of ``sigs`` in turn (one of them matches it)."""
        res = self.result
        found = False
        for sig in sigs:
            n = res.counts.get(sig.id, 0)
            if n >= keep(sig):
                m = None  # kept enough: counted by its keyword from here on, not matched
            else:
                self.searches += 1
                m = sig.pattern.search(body)
                if m is None:
                    continue
            found = True
            res.counts[sig.id] = n + 1
            res.last_line[sig.id] = line_no
            if rank is not None:
                res.ranks.setdefault(sig.id, set()).add(rank)
            if m is not None:
                if n + 1 >= keep(sig):
                    self.epoch += 1  # counted by keyword from now on
                context = _context(before(), cut, rank) if n < CONTEXT_PER_SIGNATURE else ()
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                res.matches.append(Match(sig, line_no, text, groups, rank, context))
                if sig.id in self.once:
                    self.done.add(sig.id)
                    self.epoch += 1
                    self._retire()
        if not found:
            if len(self.unmatched) >= 4096:
                self.unmatched.clear()
            self.unmatched.add(raw)
        return found


class ShapeLiterals(Literals[bytes]):
    """Digit guards and digit keywords with their digits as 0, looked for in a digit shape (not a
    line's keywords nor a gate's leads: tests count those tries apart)."""


class Plan(NamedTuple):
    """The signatures a line's keywords name (``sigs``, in match order), those of them counted by
    keyword (``kept``), and what tells whether any other matches (``gate``; None: none is open)."""

    epoch: int
    held: frozenset[bytes]
    sigs: tuple[Signature, ...]
    kept: tuple[Signature, ...]
    gate: Gate | None


class Shape(NamedTuple):
    """The outcome of the lines of one digit shape (``Matcher._shape``): the signatures counted
    (``kept``; None: the line is a quoted ``raise``), whether a prefix names a rank (its value
    differs), and the literals whose presence in a line makes it no longer alike: ``guards``
    (absent from it; only those that a line of the shape can hold), the digit keywords ``maybe``
    (present as in ``held``)."""

    epoch: int
    kept: tuple[Signature, ...] | None
    ranked: bool
    guards: tuple[bytes, ...]
    maybe: tuple[bytes, ...]
    held: tuple[bool, ...]

    def holds(self, raw: bytes) -> bool:
        """Whether ``raw`` (of this shape) is alike: its outcome is this one."""
        if self.guards and any(map(raw.__contains__, self.guards)):
            return False
        return not self.maybe or tuple([k in raw for k in self.maybe]) == self.held


def segment_end(buf: bytes, hit: int, hi: int | None = None) -> int:
    """Where the segment holding ``buf[hit]`` ends: its line's end or the next carriage return,
    looked for up to ``hi`` (``hi`` when neither is before it)."""
    hi = len(buf) if hi is None else hi
    nl = buf.find(b"\n", hit, hi)
    limit = nl if nl >= 0 else hi
    cr = buf.find(b"\r", hit, limit)
    return cr if cr >= 0 else limit


def segment_start(buf: bytes, hit: int, lo: int = 0) -> int:
    """Where the segment holding ``buf[hit]`` starts: after the last newline or carriage return,
    looked for from ``lo`` (``lo`` when neither is after it)."""
    nl = buf.rfind(b"\n", lo, hit) + 1 or lo
    return max(nl, buf.rfind(b"\r", nl, hit) + 1)


def _context(before: bytes, cut: bool, rank: int | None) -> tuple[str, ...]:
    """Up to ``CONTEXT_LINES`` lines of ``before`` (the bytes before a match's segment), from its
    rank or from no rank; ``cut``: the first line of ``before`` is incomplete."""
    before = before[: before.rfind(b"\n") + 1]  # drop redraws on the match's own line
    if cut:
        before = before[before.find(b"\n") + 1 :]  # and the first, cut line
    lines: list[str] = []
    for piece in _visible(before):
        text = clean(piece)
        if not text:
            continue
        other = split_prefix(text)[1]
        if rank is None or other is None or other == rank:
            # the line's own indentation kept (a traceback's frames and their source lines);
            # redacted, then cut
            lines.append(_indent(piece) + (redacted_cut(text, 1000) if len(text) > 1000 else text))
    return tuple(lines[-CONTEXT_LINES:])


def range_chunks(fh: BinaryIO, start: int, end: int) -> Iterator[bytes]:
    """The bytes ``[start, end)`` of an open file, in blocks of ``CHUNK``."""
    fh.seek(start)
    left = end - start
    while left > 0:
        block = fh.read(min(CHUNK, left))
        if not block:
            return
        left -= len(block)
        yield block


def _chunks(stream: BinaryIO | Iterable[bytes]) -> Iterable[bytes]:
    if hasattr(stream, "read"):
        return iter(partial(stream.read, CHUNK), b"")
    return stream


def scan(
    stream: BinaryIO | Iterable[bytes],
    sigs: tuple[Signature, ...] | None = None,
    anchor_list: tuple[bytes, ...] | None = None,
    history: bytes = b"",
    offset: int = 0,
    carry: bytes = b"",
    flush: bool = True,
) -> ScanResult:
    """Scan ``stream`` (a binary file or an iterable of byte chunks) in one pass; ``history``:
    the bytes before it (context only: not scanned, not counted), ``offset``: where the stream
    starts in its file. A scan that goes on where another stopped within a long line
    (``parallel``) is given the bytes that one pass would carry there (``carry``: scanned with
    the stream); one that stops within it (``flush`` False) leaves its carry unscanned."""
    sc = Matcher(sigs or signatures(), anchor_list or anchors())
    history, head = history[-HISTORY:], []
    for chunk in _chunks(stream):
        if not chunk:
            continue
        if sc.result.bytes_read < HEAD:
            head.append(chunk[: HEAD - sc.result.bytes_read])
        sc.result.bytes_read += len(chunk)
        buf = history + carry + chunk
        sc.buf_offset = offset + sc.result.bytes_read - len(buf)
        lo = len(history)
        last = max(buf.rfind(b"\n", lo), buf.rfind(b"\r", lo))
        if last >= 0:
            cut = last + 1
        elif len(buf) - lo > MAX_LINE:
            cut = len(buf) - sc.longest + 1  # a keyword starting before it ends inside buf
        else:
            carry = buf[lo:]
            continue
        sc.block(buf, lo, cut)
        history, carry = buf[max(0, cut - HISTORY) : cut], buf[cut:]
    buf = history + carry
    sc.buf_offset = offset + sc.result.bytes_read - len(buf)
    if carry and flush:
        sc.block(buf, len(history), len(buf))
    last_line = buf[buf.rfind(b"\n") + 1 :]
    sc.result.lines = sc.line_base + (1 if last_line.strip() else 0)
    sc.result.newlines = sc.line_base
    sc.result.head = b"".join(head)
    return sc.result
