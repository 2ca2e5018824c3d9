"""A release bug behind a generic message, from the fix history of the function that raised (TRI014).

A stack package's own bug often surfaces as a message every program prints (``'NoneType' object
is not iterable``, ``list indices must be integers or slices, not str``, an ``AssertionError``):
no signature can tell it, but its place can. The frames of the traceback inside the package that
raised — the innermost frame of a package envdoctor has a fix history of (rules/knowledge/fixes/,
scripts/derive_fix_history.py) and the frames of that package above it — are looked up in that
history: the fix commits that later changed those very functions, and the release that first
shipped each.

Severity by certainty:

* an error when the fix matches the failure — the source line the traceback prints under the
  frame is one the fix removed, or the fix's subject names the exception (``TypeError``,
  ``NoneType``), words of its message or the function itself — and the log shows the package's
  version, older than the fix's release, or the line it prints under the raising frame is one the
  fix removed from the file (the run had the code before the fix);
* a warning naming the candidate fixes when they match the failure but the log shows no version,
  or when the log's version is older than fixes that name only the function (the place, not the
  failure) or than at most ``MAX_WEAK`` fixes of the raising function that name nothing of it;
* nothing otherwise: a version that already has every fix of those functions, a function no fix
  changed, or a log without the version whose failure no fix names.

Which of several fixes of a function is the run's (set 14's DeepSpeed logs named an earlier fix
whose release would not hold the settled one):

* a fix the run already had is none: released at or before the version the log shows, the oldest
  release its frames place it at, or the release of a fix that wrote a line its traceback prints
  (the fix history keeps the lines each fix added: ``_had``);
* a fix whose message quotes another failure of the same kind — the same exception with another
  message, or raised at a frame of the package this traceback does not pass through — is none
  (``_elsewhere``);
* a fix that only changed the function (its subject names the function, or nothing of the failure)
  is none where the log prints the frame's line and no fix of the function removed it: the line
  that failed is still in the file after them;
* of those left, the one that removed the printed line or quotes the failure is named first, and
  the pin is the first release that holds every fix left, the newest of them.

The history is read only for a traceback that has a frame in a package it covers, and for a
failure the log shows without any frame (``unframed``): placed by its message in the raise-site
index (a fix must quote the failure: its traceback, its exception, its message in prose), or an
attribute an object lacks (the fixes of one package that gave the object's class that method or
name the attribute and the class). A module Unsloth generated that does not compile
(``generated``) is its generator's bug, named with the generator's later fixes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.knowledge.fix_history import Fix, FixHistory, fix_history, line_hash, packages
from envdoctor.knowledge.frame_index import bare_line
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.logversions import LogVersion
from envdoctor.triage.traceback import Frame, Traceback

if TYPE_CHECKING:
    from envdoctor.knowledge.raise_sites import Site

RULE = "TRI014"
MAX_FRAMES = 4  # frames of the raising package looked at: the innermost and those above it
MAX_NAMED = 3  # candidate fixes named in a finding
MAX_WEAK = 3  # fixes after the log's version that may be named without matching the failure

LINE = "it removed the very line the traceback shows"
QUOTED = "its message quotes the same failure at the same frame"  # a traceback like the log's
QUOTED_EXC = "its message quotes the same exception"
SAID = "its message quotes the failure's message"  # in prose, without the exception's name
FUNCTION = "its subject names the function"  # a match of the place, not of the failure: a warning
#: failures of resources and the environment, not of a function's code
_RESOURCES = ("out of memory", "cuda error", "nccl", "illegal memory access", "device-side assert")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
#: words of messages that name no failure in particular
_COMMON = frozenset(
    (
        "object",
        "type",
        "error",
        "none",
        "with",
        "that",
        "this",
        "must",
        "have",
        "from",
        "when",
        "been",
        "into",
        "expected",
        "should",
        "while",
        "found",
        "given",
        "value",
        "values",
        "argument",
        "arguments",
        "cannot",
        "call",
        "called",
        "could",
        "does",
        "true",
        "false",
        "only",
        "more",
        "less",
        "than",
        "same",
        "each",
        "other",
        "list",
        "dict",
        "tuple",
        "string",
        "indices",
        "integers",
        "slices",
        "support",
        "supported",
        "attribute",
        "iterable",
        "subscriptable",
        "callable",
        "exception",
        "traceback",
        "most",
        "recent",
        "last",
        "file",
        "line",
    )
)
_EXC_WORDS = {  # the words a fix's subject uses for an exception
    "TypeError": ("typeerror", "type error"),
    "KeyError": ("keyerror", "key error"),
    "IndexError": ("indexerror", "index error", "out of range"),
    "AttributeError": ("attributeerror", "attribute error"),
    "AssertionError": ("assertionerror", "assertion", "assert"),
    "ValueError": ("valueerror",),
    "RuntimeError": ("runtimeerror",),
    "ZeroDivisionError": ("zerodivision", "division by zero", "divide by zero"),
    "UnboundLocalError": ("unboundlocal", "unbound"),
    "NotImplementedError": ("notimplemented", "not implemented"),
    "OverflowError": ("overflowerror", "overflow"),
    "RecursionError": ("recursionerror", "recursion"),
    "FileNotFoundError": ("filenotfound", "file not found"),
}


@dataclass
class Candidate:
    fix: Fix
    frame: Frame
    why: str  # what of the failure the fix matches ("" for none)
    depth: int  # 0: the innermost frame of the package


#: Unsloth's generated trainers (``unsloth_compiled_cache/UnslothGRPOTrainer.py``): TRL's trainer
#: with the functions that unsloth/models/rl_replacements.py writes (``grpo_trainer_compute_loss``)
_COMPILED = re.compile(r"unsloth_compiled_cache/Unsloth(?P<trainer>[A-Za-z]{1,40})Trainer\.py$")
#: packages users run from a source checkout (``src/llamafactory/``, ``prime-rl/src/prime_rl/``),
#: whose folder the traceback model does not name a package: import folder -> distribution
_CHECKOUT = {
    "llamafactory": "llamafactory",
    "prime_rl": "prime-rl",
    "slime": "slime",
    "axolotl": "axolotl",
    "open_instruct": "open-instruct",
}


def _own(f: Frame) -> Frame:
    """``f`` as the fix history names its place: Unsloth's generated trainers as the replacement
    functions that write them, a checkout of a package the traceback model reads as the user's code
    as that package."""
    if f.package is not None:
        return f
    path = f.path.replace("\\", "/")
    m = _COMPILED.search(path)
    if m is not None and f.function:
        name = f"{m['trainer'].lower()}_trainer_{f.function.split('.')[-1]}"
        return Frame("unsloth", f.path, "models/rl_replacements.py", name, f.line, f.code)
    for folder, pkg in _CHECKOUT.items():
        i = path.rfind(f"/{folder}/")
        if i < 0 and path.startswith(f"{folder}/"):  # a path the paster cut: ``slime/utils/x.py``
            i = -1
        elif i < 0:
            continue
        return Frame(pkg, f.path, path[i + len(folder) + 2 :], f.function, f.line, f.code)
    return f


def _stack(t: Traceback) -> tuple[str, list[Frame]] | None:
    """The package that raised (the innermost frame of a package with a fix history) and its
    frames, innermost first (the run of that package's frames ending there)."""
    have = packages()
    if not have:
        return None
    frames = [_own(f) for f in t.shown_frames()]  # up to the frame an attribute hook raised for
    for i in range(len(frames) - 1, -1, -1):
        pkg = frames[i].package
        if pkg in have:
            run = []
            for f in reversed(frames[: i + 1]):
                if f.package != pkg:
                    break
                run.append(f)
            return pkg, run[:MAX_FRAMES]
    return None


def _function(f: Frame) -> str:
    """The frame's function as the history names it: ``<dictcomp>``/``<lambda>``/``<module>``
    frames name none (the enclosing function is the frame above it)."""
    name = f.function.strip()
    return "" if not name or name.startswith("<") else name


def _message_words(t: Traceback) -> set[str]:
    words = {w.lower() for w in _WORD.findall(t.message[:500])}
    return {w for w in words if w not in _COMMON}


_TOKEN = re.compile(r"[a-z_][a-z0-9_]{2,}")


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()[:300]))


_LITERAL = re.compile(r"'([^'\d]{1,60})'|\"([^\"\d]{1,60})\"")


def _literals(text: str) -> set[str]:
    """The names a message quotes (``'weight_metadata'``), those without digits (a run's sizes,
    devices and layer numbers differ)."""
    return {a or b for a, b in _LITERAL.findall(text[:300])}


def _same_exception(quoted: str, t: Traceback) -> bool:
    """``quoted`` (``Type: message`` from a fix's message) is the log's exception: the same class
    and the same message — its words, numbers and punctuation aside (a device, a size, a path
    differ from run to run), the names it quotes alike — or both without one."""
    name, _, message = quoted.partition(":")
    if name.strip() != t.name or not _literals(t.message) <= _literals(message):
        return False
    mine, theirs = _tokens(t.message), _tokens(message)
    if not mine or not theirs:
        return not mine and not theirs
    shared = mine & theirs
    return len(shared) >= min(3, len(mine), len(theirs)) and len(shared) * 3 >= 2 * min(
        len(mine), len(theirs)
    )


def _quotes(fix: Fix, frame: Frame, t: Traceback) -> str:
    """What of the failure a traceback or an exception quoted in ``fix``'s message matches: the
    same exception raised at the same frame (the innermost frame of the package it quotes is this
    one), or the same exception; "" for neither."""
    if not any(_same_exception(q, t) for q in fix.quoted_exc):
        return ""
    if fix.quoted_frames and _tokens(t.message):  # a bare ``AssertionError`` tells no assert apart
        module, function = fix.quoted_frames[-1]
        short = function.split(".")[-1]
        if module == frame.module_path and short == frame.function.split(".")[-1]:
            return QUOTED
    return QUOTED_EXC


_PROSE = re.compile(r"[a-z]{2,}")
MIN_SAID = 5  # words of a message a fix quotes in prose: fewer name no failure in particular


def _prose(text: str) -> str:
    """``text``'s words of letters only, lower case: a message's numbers, sizes and punctuation
    differ from run to run (``# of LoRAs = 128``), its words do not."""
    return " ".join(_PROSE.findall(text.lower()))


def _says(fix: Fix, t: Traceback) -> bool:
    """A message ``fix``'s prose quotes (``'# of LoRAs does not match # of saved modules'``) is in
    the log's message, word for word."""
    if not fix.quoted_messages:
        return False
    said = f" {_prose(t.message[:1000])} "
    return any(
        len(w.split()) >= MIN_SAID and f" {w} " in said for w in (_prose(q) for q in fix.quoted_messages)
    )


def _elsewhere(fix: Fix, t: Traceback, stack: Sequence[Frame]) -> bool:
    """``fix``'s message quotes another failure of ``t``'s kind: the same exception class with
    another message (``too many values to unpack`` for ``not enough values to unpack``), or the
    same exception (the one the fix quotes) raised inside the package at a frame that ``stack``
    (the traceback's frames of it) does not pass through (deepspeedai/DeepSpeed#7257 quotes
    ``IndexError: tuple index out of range`` in ``gather_params``; a log that raises it in
    ``_mark_uc_metadata`` is not its failure)."""
    kind = [q for q in fix.quoted_exc if q.partition(":")[0].strip() == t.name]
    if not kind:
        return False
    if not any(_same_exception(q, t) for q in kind):
        return True
    # the frames tell only where the fix quotes one failure (its frames are that one's), the log's
    # was raised inside the package (not below a call of it into another), and the quoted frame is
    # a module of the package its history knows (not a path of an environment named like it)
    if len(fix.quoted_exc) != 1 or not fix.quoted_frames or not stack or not t.frames:
        return False
    if _own(t.shown_frames()[-1]).package != stack[0].package:
        return False
    module, function = fix.quoted_frames[-1]
    h = fix_history(fix.package)
    if h is None or module not in h.functions:
        return False
    short = function.split(".")[-1]
    return not any(f.module_path == module and f.function.split(".")[-1] == short for f in stack)


def _matches(
    fix: Fix, frame: Frame, t: Traceback, words: set[str], line: bool = True, stack: Sequence[Frame] = ()
) -> str:
    """What of the failure ``fix`` matches: the raising line, a traceback its message quotes, the
    exception, the message's words, the function; "" for nothing, and for a fix whose message
    quotes another failure of the same kind (``_elsewhere``; ``stack``: the traceback's frames of
    the package) (``line=False``: what its subject names only)."""
    if line and frame.code and line_hash(frame.code) in fix.removed:
        return LINE
    if _elsewhere(fix, t, stack or (frame,)):
        return ""
    if line:
        said = _quotes(fix, frame, t)
        if said == QUOTED or said and not _drift_shaped(t):
            return said
        if _says(fix, t):
            return SAID
    subject = fix.subject.lower()
    name = t.name
    if _drift_shaped(t):
        return ""  # another package's API the call does not fit: only the changed line tells
    if name and any(re.search(rf"\b{w}\b", subject) for w in _EXC_WORDS.get(name, (name.lower(),))):
        return f"its subject names the {name}"
    if "nonetype" in t.message.lower() and "nonetype" in subject:
        return "its subject names the NoneType of the message"
    hits = sorted(w for w in words if re.search(rf"\b{re.escape(w)}\b", subject))
    if len(hits) >= 2 or any("_" in w for w in hits):
        return f"its subject names the message's {', '.join(repr(w) for w in hits[:3])}"
    short = fix.function.split(".")[-1]
    if len(short) > 4 and not short.startswith("__") and short.lower() in subject:
        return FUNCTION + f" {short}()"
    return ""


#: messages of API drift (a call, an import, an attribute that does not fit another release):
#: the fix's words would name any change of the call, only its removed line tells this one
_DRIFT = re.compile(
    r"unexpected keyword argument|required (?:positional|keyword-only) argument|positional arguments? but"
    r"|cannot import name|No module named|has no attribute"
)


def _drift_shaped(t: Traceback) -> bool:
    return _DRIFT.search(t.message[:500]) is not None


def _strength(why: str) -> int:
    """0: the raising line or a quoted traceback; 1: the exception or the message; 2: the
    function; 3: nothing."""
    return 0 if why in (LINE, QUOTED, SAID) else 3 if not why else 2 if why.startswith(FUNCTION) else 1


def _later(release: str, than: str) -> bool:
    """A fix first released in ``release`` ("": in none yet) came after one released in ``than``."""
    if not release:
        return bool(than)
    return bool(than) and versions.below(than, release) is True


def _newer(release: str, shown: str | None, newest: str = "") -> bool:
    """A fix first released in ``release`` is not in ``shown`` (None: unknown). A fix in no
    release yet (``release`` "") is in none of the releases up to ``newest``; a version after the
    newest release envdoctor knows may be a build from the branch that has it: not told."""
    if not release:
        return shown is None or not newest or not versions.below(newest, shown)
    return shown is None or versions.below(shown, release)


def _had(pkg: str, t: Traceback) -> Fix | None:
    """The newest fix the run had, told by its traceback: a frame of ``pkg`` that prints a line a
    fix added to that function (a line the file before the fix did not hold, and that no earlier
    fix removed: not code written back) ran code with that fix — deepspeedai/DeepSpeed#7109 wrote
    ``out_features, in_features = self.weight.shape[-2:] …``; a traceback that prints it is of
    deepspeed 0.16.5 or later, and no fix of 0.16.5 or before is its fix. None for none."""
    h = fix_history(pkg)
    if h is None:
        return None
    best: Fix | None = None
    for f in (_own(x) for x in t.frames):
        fn = _function(f)
        if f.package != pkg or not f.code or not fn:
            continue
        line = line_hash(f.code)
        fixes = h.changed(f.module_path, fn)
        adding = [x for x in fixes if line in x.added]
        if not adding:
            continue
        first = min(adding, key=lambda x: x.order)
        if any(line in x.removed and x.order < first.order for x in fixes):
            continue  # the line was in the file before: removed by one fix, written back by another
        if best is None or first.order > best.order:
            best = first
    return best


def _in_run(fix: Fix, had: Fix | None) -> bool:
    """The run, which had the fix ``had``, has ``fix`` too: released at or before ``had``'s
    release; for ``had`` in no release yet (a build of the branch), any release or an earlier commit."""
    if had is None:
        return False
    if had.release:
        return bool(fix.release) and not versions.below(had.release, fix.release)
    return bool(fix.release) or fix.order <= had.order


def _candidates(
    pkg: str, frames: list[Frame], t: Traceback, shown: str | None, had: Fix | None = None
) -> list[Candidate]:
    """The fixes of ``frames``' functions that the run may lack: released after ``shown`` (the
    oldest release it may have) and not in the release of ``had`` (a fix its traceback shows it ran)
    or before."""
    h = fix_history(pkg)
    if h is None:
        return []
    newest = h.newest
    words = _message_words(t)
    out: list[Candidate] = []
    seen: set[str] = set()
    for depth, frame in enumerate(frames):
        fn = _function(frame)
        if not fn:
            continue
        for fix in h.changed(frame.module_path, fn):
            if fix.commit in seen or not _newer(fix.release, shown, newest) or _in_run(fix, had):
                continue
            seen.add(fix.commit)
            out.append(Candidate(fix, frame, _matches(fix, frame, t, words, stack=frames), depth))
    callee = _CALLEE.search(t.message[:300]) if t.name == "TypeError" else None
    if callee is not None and frames:
        # a call inside the package that does not fit the package's own method: the fixes of
        # that method count at the calling frame (a traceback quoted in one shows that frame)
        for fix in h.named(callee["callee"]):
            if fix.commit in seen or not _newer(fix.release, shown, newest) or _in_run(fix, had):
                continue
            seen.add(fix.commit)
            why = _matches(fix, frames[0], t, words, stack=frames)
            if why == QUOTED:
                out.append(Candidate(fix, frames[0], why, 0))
    return out


#: a call's ``TypeError`` that names the callee: ``Sender.send_chunks() got an unexpected …``
_CALLEE = re.compile(
    r"(?P<callee>[A-Za-z_]\w{0,80}(?:\.[A-Za-z_]\w{0,80}){1,3})\(\) (?:got an unexpected keyword argument|"
    r"missing \d+ required|takes \d+ positional|got multiple values)"
)


def _shown(pkg: str, log: Log) -> LogVersion | None:
    """The run's version of ``pkg``: the log's, a range its traceback's frames fit (``low`` to
    ``version``), or the snapshot's (``--facts``)."""
    v = log.versions.get(pkg)
    if v is not None:
        return v
    ctx = log.ctx
    if ctx is not None and ctx.facts.source != "live":  # --facts: the run's snapshot
        version = ctx.version(pkg)
        return LogVersion(version, 0, "report") if version else None
    return None


def _before(v: LogVersion | None, release: str, newest: str = "") -> bool:
    """The run's version, or every release of the range its frames fit, is older than ``release``
    (for a fix in no release yet, ``release`` "": is a release up to ``newest``)."""
    if v is None or v.newest:
        return False
    if not release:
        return bool(newest) and not versions.below(newest, v.version)
    return versions.below(v.version, release)


def _line_stays(c: Candidate, h: FixHistory) -> bool:
    """The log prints the line of ``c``'s frame and no fix of that function removed it: the line
    is still in the file after every fix the history knows of it."""
    code = c.frame.code
    if not code.strip():
        return False
    line = line_hash(code)
    return not any(line in f.removed for f in h.changed(c.frame.module_path, _function(c.frame)))


def _where(f: Frame) -> str:
    at = f.at
    return f"{at} in {f.function}" if f.function else at


def _ref(fix: Fix, source: str) -> str:
    ref = f"{source}#{fix.number}" if fix.number and source else (f"#{fix.number}" if fix.number else "")
    return f"“{fix.subject}” ({ref + ', ' if ref else ''}commit {fix.commit[:10]}, {fix.date})"


def fixed_after(t: Traceback, m: Match, log: Log, placed: str = "") -> Draft | None:
    """TRI014 for the exception ``t`` (module docstring), or None; ``placed``: how its frame was
    found where the log shows none (``unframed``)."""
    if not t.exc_type or not t.frames or t.name in ("KeyboardInterrupt", "OutOfMemoryError", "SystemExit"):
        return None
    if any(r in t.message[:500].lower() for r in _RESOURCES):
        return None
    found = _stack(t)
    if found is None:
        return None
    pkg, frames = found
    # the innermost frame is another package's (vLLM under a wrapper's call): the package with a
    # history only called into it, so its frames are callers, never the raising place
    inner = _own(t.shown_frames()[-1]).package
    below = inner if inner != pkg else None
    run = _shown(pkg, log)
    shown = run.version if run is not None and run.exact else None
    # fixes after the oldest release the run may have (its version, or its frames' range), and
    # after the newest fix its traceback shows it ran (a line that fix added)
    had = _had(pkg, t)
    cands = _candidates(pkg, frames, t, (run.low or run.version) if run is not None else None, had)
    h = fix_history(pkg)
    if h is None:
        return None
    # a fix that only changed the function (its subject names the function, or nothing of the
    # failure) where the log prints the frame's line and no fix of it removed that line: the line
    # that failed is still in the file after them, they are not this failure's fix
    cands = [c for c in cands if _strength(c.why) < 2 or not _line_stays(c, h)]
    if not cands:
        return None
    newest = h.newest
    # without the log's version, a fix that names only the function is too weak to name
    strong = [c for c in cands if c.why and (run is not None or not c.why.startswith(FUNCTION))]
    if strong:
        pool = strong
    elif run is not None:
        innermost = [c for c in cands if c.depth == 0 and _before(run, c.fix.release, newest)]
        if not innermost or len(innermost) > MAX_WEAK:
            return None  # the raising function changed often since: no one fix stands out
        pool = innermost
    else:
        return None  # no version and nothing of the failure in any fix: too weak to name
    # a released fix first (the oldest that matches), then one in no release yet
    pool.sort(key=lambda c: (_strength(c.why), c.depth, not c.fix.release, versions.sort_key(c.fix.release)))
    best = pool[0]
    words = _message_words(t)
    if best.why == LINE and _strength(_matches(best.fix, best.frame, t, words, line=False, stack=frames)) > 1:
        # the fix that removed the printed line names nothing of this failure, and a later fix of
        # these frames names it (its exception, its message): the failure outlived the removal
        # (the line came back, or it had another place) and the later fix is the run's
        # (deepspeedai/DeepSpeed#8214 "Fix KeyError …" after #7243, whose release still raises)
        later = [c for c in pool if _strength(c.why) == 1 and _later(c.fix.release, best.fix.release)]
        if later:
            best = min(later, key=lambda c: (not c.fix.release, versions.sort_key(c.fix.release)))
    # the log's version is older than the fix, or the raising line it prints is one the fix
    # removed (the run had the code before the fix), or the fix's message quotes this very
    # failure at this frame; and the fix matches the failure
    matched = bool(best.why) and not best.why.startswith(FUNCTION)
    before = _before(run, best.fix.release, newest)
    # the traceback shows a line the fix removed: the run had the code before it; in a caller's
    # frame that is the failure's place only when the fix's subject names the failure too
    removed = best.why == LINE and (
        (best.depth == 0 and below is None)
        or _strength(_matches(best.fix, best.frame, t, _message_words(t), line=False, stack=frames)) == 1
    )
    # the fix's message quotes this failure at this frame; a range of releases the run may have
    # that reaches the fix's release leaves open whether it had it
    # (its traceback's innermost frame of the package is this one: what raised below it, in
    # another package, is the same too)
    quoted = best.why == QUOTED and best.depth == 0 and (run is None or before)
    certain = matched and (before or removed or quoted)
    source = h.source
    raised = f"{t.name}: {t.message[:200]}" if t.message else t.name
    place = f"raised in {below or 'another package'} under {pkg}'s call" if below else f"raised inside {pkg}"

    released = best.fix.release
    if released:
        when = f"first released in {pkg} {released}"
    else:
        when = (
            f"fixed on the default branch on {best.fix.date}, after {pkg} {newest or 'its newest release'}; "
            "not in a release yet"
        )
    callee = best.fix.function.split(".")[-1] != best.frame.function.split(".")[-1]
    changed = (
        f"calling {best.fix.function}(), which a later {pkg} fix"
        if callee
        else f"a function that a later {pkg} fix"
    )
    what = (
        f"{raised} — {place} ({_where(best.frame)}{'; ' + placed if placed else ''}), {changed} "
        f"changed: {_ref(best.fix, source)}, {when}" + (f" ({best.why})" if best.why else "")
    )
    if run is not None and run.inferred:
        what += (
            f"; the traceback's frames place the run at {pkg} {run.range_text()} "
            f"({'; '.join(run.frames[:2])})"
            + (", older than that release" if before else f": whether it had the fix, `pip show {pkg}` tells")
        )
    elif run is not None:
        what += f"; the log shows {pkg} {run.version}, " + (
            "older than that release" if released else "a release without it"
        )
    elif certain and quoted and not removed:
        what += f"; the fix's own message shows this failure at this frame (the log shows no {pkg} version)"
    elif certain:
        what += f"; the run had {pkg}'s code from before the fix (the log shows no {pkg} version)"
    else:
        what += f"; the log shows no {pkg} version: `pip show {pkg}` tells whether the run had it"
    if had is not None:
        what += f"; the traceback prints a line that {_ref(had, source)} wrote: the run has " + (
            f"{pkg} {had.release} or later" if had.release else f"{pkg}'s code after {had.date}"
        )
    others = pool[1:MAX_NAMED]
    if others:
        what += "; other fixes of the same frames: " + "; ".join(
            f"{_ref(c.fix, source)} in {c.fix.release or 'no release yet'}" for c in others
        )
    # the pin holds every fix the finding names: the newest release of them, never an older one (a
    # weaker candidate past MAX_NAMED, not named, does not move it)
    upgrade = max(
        (c.fix.release for c in pool[:MAX_NAMED] if c.fix.release), key=versions.sort_key, default=""
    )
    if released and upgrade != released:
        fix = (
            f"pip install '{pkg}=={upgrade}' (the first release with every fix named; a later one has "
            "them too)"
        )
    elif released:
        fix = f"pip install '{pkg}=={released}' (the first release with that fix; a later one has it too)"
    else:
        fix = _from_source(pkg, best.fix, source, h.subdir)
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        package=pkg,
        function=best.fix.function,
        module=best.fix.module,
        fixed_in=best.fix.release or None,
        upgrade=upgrade if released and upgrade != released else None,
        unreleased=not best.fix.release or None,
        commit=best.fix.commit,
        number=best.fix.number or None,
        had=had.commit if had is not None else None,
        shown=shown,
        inferred=run.range_text() if run is not None and run.inferred else None,
        inferred_from=list(run.frames) if run is not None and run.inferred else None,
        matched=best.why or None,
        located_by=placed or None,
    )
    return at_severity(d, Severity.ERROR if certain else Severity.WARNING)


def _from_source(pkg: str, fix: Fix, source: str, subdir: str) -> str:
    """The install of a fix in no release yet: the repository at that commit or later."""
    if not source:
        return (
            f"install {pkg} from its repository at commit {fix.commit} or later (no release has the fix yet)"
        )
    sub = f"#subdirectory={subdir}" if subdir else ""
    return (
        f"pip install '{pkg} @ git+https://github.com/{source}@{fix.commit}{sub}' (no release has the fix "
        f"yet: install from the repository at that commit or later, or the first release after {fix.date})"
    )


def cut_fixed(tb: Traceback, log: Log, line: int) -> Draft | None:
    """A traceback cut before its exception line whose innermost frame, in a package with a fix
    history, prints a line that a later fix of that function removed: TRI014 as a warning (the run
    stopped on the line the fix replaced, but the exception is not shown), or None."""
    found = _stack(tb)
    if found is None or not tb.frames or _own(tb.frames[-1]).package != found[0]:
        return None  # no such package, or its frame only called into another package
    pkg, frames = found
    frame = frames[0]
    h = fix_history(pkg)
    if h is None or not frame.code or not _function(frame):
        return None
    run = _shown(pkg, log)
    low = (run.low or run.version) if run is not None else None
    removed = line_hash(frame.code)
    had = _had(pkg, tb)
    fixes = [
        f
        for f in h.changed(frame.module_path, _function(frame))
        if removed in f.removed and _newer(f.release, low, h.newest) and not _in_run(f, had)
    ]
    if not fixes:
        return None
    fixes.sort(key=lambda f: (not f.release, versions.sort_key(f.release)))
    best = fixes[0]
    when = (
        f"first released in {pkg} {best.release}"
        if best.release
        else f"fixed on the default branch on {best.date}, after {pkg} {h.newest or 'its newest release'}; "
        "not in a release yet"
    )
    what = (
        f"the log ends inside a traceback, before its exception line; its last frame "
        f"({_where(frame)}) prints a line that a later {pkg} fix removed: {_ref(best, h.source)}, {when} — "
        "likely the failure that fix addresses, but the exception is not shown"
    )
    if run is not None:
        what += f"; the log shows {pkg} {run.range_text()}"
    fix = (
        f"pip install '{pkg}=={best.release}' (the first release with that fix; a later one has it too)"
        if best.release
        else _from_source(pkg, best, h.source, h.subdir)
    ) + "; paste the traceback to its end (the 'SomeError: message' line) to confirm"
    ev = {
        "line": line,
        "cut_traceback": True,
        "package": pkg,
        "function": best.function,
        "module": best.module,
        "commit": best.commit,
        "matched": LINE,
        **({"fixed_in": best.release} if best.release else {"unreleased": True}),
        **({"number": best.number} if best.number else {}),
    }
    return Draft(line, Finding(RULE, Severity.WARNING, what, fix, ev))


# -- a failure the log shows without a frame of the package that raised it -------------------------

RAISE_SITE = "placed by its message in envdoctor's raise-site index; the log shows no frame of it"
MAX_SITES = 3  # raise sites of one message looked up in the history


def unframed(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI014 for an exception the log shows without any frame (a one-line paste, an issue's
    quote): the function its message places it in (the raise-site index: the package, file and
    function whose ``raise`` prints it) looked up in that package's fix history as if the
    traceback showed that frame; else an attribute that an object lacks, looked up among the fixes
    that gave a class that attribute or name it (``missing_attribute``)."""
    if any(x.frames for x in t.all()) or not t.message.strip():
        return None
    return by_raising_line(t, m, log) or by_raise_site(t, m, log) or missing_attribute(t, m, log)


# -- the raising line printed without its frame -------------------------------------------------

RAISING_LINE = (
    "placed by its raising line, which a fix removed from that function; the log shows no frame of it"
)
#: a prefix IPython puts before the line that raised (``--> 684 code``, ``----> 1 code``)
_IPY_ARROW = re.compile(r"^-*>\s*\d{1,7}\s")
#: a caret line under the failing expression (``~~~~^^^^``): no source
_CARETS = re.compile(r"^[\s~^]*$")
#: a subject of a formatter's pass: the lines it "removed" are the same code rewritten
#: (``assert(x)`` -> ``assert x``, unslothai/unsloth#3563 "Formatting & bug fixes")
_FORMATTING = re.compile(r"\b(?:format(?:ting|ted|ter)?|lint(?:ing|er)?|ruff|style|pre-commit)\b", re.I)
MIN_LINE = 16  # characters of a line without whitespace: shorter ones (``return x``) tell no code apart
_EXC_LINE = re.compile(r"^[\w.]{0,120}(?:Error|Exception|Warning|Interrupt|Exit)\b:?")


#: a frame's header, whole or cut (``liger_kernel/…/llama.py", line 102, in lce_forward``)
_FRAME_TAIL = re.compile(r"(?:line|:)\s?\d{1,7},? in (?P<func>[\w.<>]{1,200})")


def _raising_line(m: Match) -> tuple[str, str]:
    """The source line a paste prints just above the exception's line without the frame that holds
    it (``[rank0]:     target_indicies = … random_batch["kl"] …`` over ``KeyError: 'kl'``):
    the last line of the context before the failing line, carets under it passed over, and the
    function the line above it names where that one is a frame's header the traceback model could
    not read (a path cut before its package); ("", "") where that line is no code (a frame, a
    message, prose) or too short to tell code apart."""
    from envdoctor.triage.scanner import split_prefix, unmark

    lines = [split_prefix(unmark(raw))[0].strip() for raw in m.context[-6:]]
    for i in range(len(lines) - 1, -1, -1):
        text = lines[i]
        if _CARETS.match(text):
            continue  # ``~~~~^^^^`` under the expression, or a blank line
        text = _IPY_ARROW.sub("", text).strip()
        if (
            len(bare_line(text)) < MIN_LINE
            or text.startswith(("File ", "Traceback", "During handling", "The above exception", "#"))
            or _EXC_LINE.match(text)
            or not any(c in text for c in "=([")
        ):
            return "", ""
        header = _FRAME_TAIL.search(lines[i - 1]) if i > 0 else None
        return text, header["func"] if header else ""
    return "", ""


def _removed_from(pkg: str, key: str) -> set[tuple[str, str]]:
    """The functions (module, qualified name) of ``pkg``'s history that some fix removed the line
    of hash ``key`` from (an added line's hash is kept with a ``+``: never equal to ``key``)."""
    h = fix_history(pkg)
    if h is None or key not in h.removed_lines:
        return set()
    return {
        (module, qualname)
        for module, names in h.functions.items()
        for qualname, rows in names.items()
        if any(key in row for row in rows)
    }


def by_raising_line(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI014 for an exception whose paste prints the line that raised without its frame: where
    that line is one a fix removed from exactly one function of one package's history (the run had
    that function before the fix), ``fixed_after`` with that frame. The fix named must be one that
    removed the line or quotes the failure, not a formatter's pass (its "removed" lines are the same
    code rewritten). An error only where the log's version of the package (or its frames' releases)
    is older than the fix: without the version the line tells the place, not that the run lacked
    every later fix — a warning."""
    if any(r in t.message[:500].lower() for r in _RESOURCES) or not t.exc_type:
        return None
    code, named = _raising_line(m)
    if not code:
        return None
    key = line_hash(code)
    places = {(pkg, module, fn) for pkg in packages() for module, fn in _removed_from(pkg, key)}
    if len(places) != 1:
        return None  # no fix removed it, or it was in several functions: no one place
    pkg, module, function = next(iter(places))
    if named and named.split(".")[-1] != function.split(".")[-1]:
        return None  # the frame above it names another function: a line like it, elsewhere
    here = Frame(pkg, module, module, function, 0, code)
    placed = Traceback([here], t.exc_type, t.message, t.line_no, list(t.chain), t.cause)
    d = fixed_after(placed, m, log, RAISING_LINE)
    if d is None:
        return None
    ev = d.finding.evidence
    subject = _subject(pkg, str(ev.get("commit") or ""))
    if not _firm(str(ev.get("matched") or "")) or _FORMATTING.search(subject):
        return None
    h = fix_history(pkg)
    run = _shown(pkg, log)
    if not _before(run, str(ev.get("fixed_in") or ""), h.newest if h is not None else ""):
        return at_severity(d, Severity.WARNING)
    return d


def _subject(pkg: str, commit: str) -> str:
    h = fix_history(pkg)
    if h is None or not commit:
        return ""
    return next((str(f[3]) for f in h.fixes if len(f) > 3 and str(f[0]) and commit.startswith(str(f[0]))), "")


def by_raise_site(t: Traceback, m: Match, log: Log) -> Draft | None:
    """``fixed_after`` at the raise sites that print ``t``'s message, where one package with a fix
    history raises it (``raisesites.locate_tb``): the fix must match the failure (its message or
    subject names it), its release is the pin."""
    from envdoctor.triage.raisesites import locate_tb

    if any(r in t.message[:500].lower() for r in _RESOURCES):
        return None
    loc = locate_tb(t, log)
    if loc is None or loc.package not in packages():
        return None
    sites = list(dict.fromkeys((s.module, s.function, s.exc) for s in loc.sites if s.function))
    for module, function, exc in sites[:MAX_SITES]:
        here = Frame(loc.package, module, module, function, 0, "")
        placed = Traceback([here], t.exc_type or exc, t.message, t.line_no, list(t.chain), t.cause)
        d = fixed_after(placed, m, log, RAISE_SITE)
        if d is None or not _firm(str(d.finding.evidence.get("matched") or "")):
            continue
        fixed_in = str(d.finding.evidence.get("fixed_in") or "")
        if _raised_since(loc.sites, module, function, fixed_in):
            continue  # the fix brought this raise: its message quotes what it now raises, no failure it fixed
        return d
    return None


def _raised_since(sites: Sequence[Site], module: str, function: str, release: str) -> bool:
    """Every raise site of the message in ``module``'s ``function`` first appears in ``release`` or
    later (and not in the oldest release indexed: its start is known): the raise came with the fix
    (``[Bloom] Fix hangs of bloom test``, deepspeedai/DeepSpeed#7890, turned a ``sys.exit`` into the
    ``RuntimeError`` its message shows), so the message is what the fixed code raises, not the
    failure it fixed."""
    if not release:
        return False
    mine = [s for s in sites if s.module == module and s.function == function]
    return bool(mine) and all(not s.first_indexed and versions.at_least(s.first, release) for s in mine)


def _firm(why: str) -> bool:
    """A match of the failure that holds without a frame: the fix quotes it (a traceback, the
    exception, the message in prose); words of a one-line message in a subject do not (``fix
    max_length`` names a setting every such message names)."""
    return why in (LINE, QUOTED, QUOTED_EXC, SAID)


#: an object's attribute that it lacks, in any exception's message (a wrapper's ``RuntimeError``
#: re-raises the ``AttributeError``'s text): ``'LRUCacheWorkerLoRAManager' object has no attribute
#: 'get_dummy_lora_warmup_rank'``
_LACKS = re.compile(
    r"'(?P<obj>[A-Za-z_][\w.]{0,200})' object has no attribute '(?P<attr>[A-Za-z_]\w{0,200})'"
)
_CLASS_PART = re.compile(r"[A-Z][a-z]{3,}|^[a-z]{4,}")
_PLAIN = frozenset(
    ("NoneType", "str", "dict", "list", "tuple", "int", "float", "bool", "bytes", "set", "Tensor")
)


def _distinctive(attr: str) -> bool:
    """A name that tells one attribute apart (``get_dummy_lora_warmup_rank``, ``vocab_size``), not
    a word every class has (``config``, ``device``, ``forward``)."""
    return (
        len(attr) >= 6
        and ("_" in attr.strip("_") or any(c.isupper() for c in attr[1:]))
        and not attr.startswith("__")
    )


@dataclass
class _Named:
    fix: Fix
    defines: bool  # the fix changed a function of that name: it gave a class the attribute
    parts: int  # words of the object's class its subject names (``configs`` of ``Gemma3Config``)


def _named_by(pkg: str, attr: str, parts: set[str]) -> list[_Named]:
    h = fix_history(pkg)
    if h is None:
        return []
    word = re.compile(rf"(?<![\w.]){re.escape(attr)}(?!\w)")
    out: dict[str, _Named] = {}
    for f in h.defining(attr):
        owner = f.function.rpartition(".")[0]
        if not owner or "<locals>" in owner:
            continue  # a module's function, a local class's: not the object's class
        kin = {p.lower() for p in _CLASS_PART.findall(owner.rsplit(".", 1)[-1])}
        if kin and kin <= parts:  # its class or a kin it extends (WorkerLoRAManager of LRUCache…)
            out.setdefault(f.commit, _Named(f, True, 0))  # not a sibling (SGLangRollout of vLLMRollout)
    for f in h.subjects(word):
        out.setdefault(f.commit, _Named(f, False, 0))
    for n in out.values():
        subject = n.fix.subject.lower()
        n.parts = sum(1 for p in parts if re.search(rf"\b{p}s?\b", subject))
    return list(out.values())


def _taken_back(pkg: str, fix: Fix) -> bool:
    """Whether the package's frame index (rules/knowledge/frames/) shows the function a fix gave a
    class (``LlamaRotaryEmbedding.cos_cached``) in some release and in no module of its newest: a
    later release took it away again (OpenRLHF 0.2.3 dropped the rotary class 0.2.2 patched in), so
    the fix's release is no pin that holds, and the class is no longer the package's to lack it."""
    from envdoctor.knowledge.frame_index import frame_index

    fi = frame_index(pkg)
    if fi is None or not fi.releases:
        return False
    newest, seen = len(fi.releases) - 1, False
    for names in fi.files.values():
        runs = names.get(fix.function) if isinstance(names, dict) else None
        for run in runs if isinstance(runs, list) else ():
            try:
                last = int(run[1])
            except (TypeError, ValueError, IndexError):
                continue
            if last >= newest:
                return False
            seen = True
    return seen


def _symbol_added(pkg: str, cls: str, attr: str) -> bool | None:
    """What the package's symbol history says of ``cls.attr``: True where the class's newest
    release has it and an older one lacks it (it was added), False where every release of the class
    has it, none does, or the newest lacks it (removed: a reader of the old API, drift's answer);
    None where the history has no such class."""
    from envdoctor.knowledge.symbol_history import history
    from envdoctor.knowledge.symbol_history import packages as symbol_packages

    if pkg not in symbol_packages():
        return None
    h = history(pkg)
    scope = h.class_releases(cls) if h is not None else 0
    if h is None or not scope:
        return None
    have = h.member(cls, "a", attr)[0] & scope
    newest = 1 << (scope.bit_length() - 1)  # the newest release that has the class
    return bool(have & newest) and have != scope  # the newest has it, an older one not: added


def missing_attribute(t: Traceback, m: Match, log: Log) -> Draft | None:
    """``'C' object has no attribute 'a'`` with no frame of the code that read it: the fixes of the
    stack's packages that gave a class a method ``a`` (a function of that name changed) or whose
    subject names ``a`` and a word of the object's class (``configs`` of ``Gemma3Config``), of one
    package (the object's, or the reader's); a package whose symbol history shows ``C`` always had
    ``a`` (or never) is passed over, and so is a method whose newest release lacks it again
    (``_taken_back``). A warning: the log shows neither the reader nor
    the object's package; the first release with the fix is the pin."""
    a = _LACKS.search(t.message[:500])
    if a is None:
        return None
    cls, attr = a["obj"].rsplit(".", 1)[-1], a["attr"]
    if cls in _PLAIN or not _distinctive(attr):
        return None
    parts = {p.lower() for p in _CLASS_PART.findall(cls)}
    found: dict[str, list[_Named]] = {}
    for pkg in packages():
        # a fix tied to the object: it gave its class (or a kin) the method, or names the class too
        named = [n for n in _named_by(pkg, attr, parts) if not (n.defines and _taken_back(pkg, n.fix))]
        if any(n.defines or n.parts for n in named) and _symbol_added(pkg, cls, attr) is not False:
            found[pkg] = named
    if len(found) != 1:
        return None
    pkg, named = next(iter(found.items()))
    h = fix_history(pkg)
    if h is None:
        return None
    run = _shown(pkg, log)
    low = (run.low or run.version) if run is not None else None
    named = [n for n in named if _newer(n.fix.release, low, h.newest)]
    if not named:
        return None  # the log's release has every such fix: something else lacks it
    named.sort(key=lambda n: (not n.defines, -n.parts, not n.fix.release, versions.sort_key(n.fix.release)))
    best = named[0].fix
    gave = named[0].defines
    how = (
        f"gave {best.function}() ({best.module}) to its class"
        if gave
        else f"names '{attr}'" + (" and the object's class" if named[0].parts else "")
    )
    if best.release:
        when = f"first released in {pkg} {best.release}"
    else:
        when = (
            f"fixed on the default branch on {best.date}, after {pkg} {h.newest or 'its newest release'}; "
            "not in a release yet"
        )
    what = (
        f"{t.name or 'the exception'}: {t.message[:200]} — the log shows no frame of the code that read it; "
        f"{pkg}'s fix {how}: {_ref(best, h.source)}, {when}: "
        + (
            f"{pkg}'s releases before it lack the attribute its caller reads"
            if gave
            else f"likely the {pkg} code that read it, in a release before that fix"
        )
    )
    if run is not None and run.exact:
        what += f"; the log shows {pkg} {run.version}, older than that release"
    else:
        what += f"; the log shows no {pkg} version: `pip show {pkg}` tells whether the run had it"
    others = [n.fix for n in named[1:MAX_NAMED]]
    if others:
        what += "; other fixes that name it: " + "; ".join(
            f"{_ref(f, h.source)} in {f.release or 'no release yet'}" for f in others
        )
    fix = (
        f"pip install '{pkg}>={best.release}' (the first release with that fix)"
        if best.release
        else _from_source(pkg, best, h.source, h.subdir)
    )
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        package=pkg,
        function=best.function,
        module=best.module,
        fixed_in=best.release or None,
        unreleased=not best.release or None,
        commit=best.commit,
        number=best.number or None,
        attribute=attr,
        matched=f"it changed {best.function}()" if gave else f"its subject names '{attr}'",
        located_by="fix history, by the attribute the object lacks",
    )
    return at_severity(d, Severity.WARNING)


def quoted_fixed(head: bytes, log: Log) -> Draft | None:
    """``by_raise_site`` for a message a short paste quotes without its exception's name
    (``raisesites.quoted_lines``): read only where no failing line was found."""
    from envdoctor.triage.raisesites import quoted_lines

    for m, tb in quoted_lines(head):
        d = by_raise_site(tb, m, log)
        if d is not None:
            return d
    return None


# -- code Unsloth generated that does not compile ------------------------------------------------

#: a compile error of a module Unsloth wrote (``unsloth_compiled_cache/UnslothGKDTrainer.py``), as
#: its compiler reports it or as Python's ``SyntaxError`` prints it: ``message (File.py, line N)``
_GENERATED = re.compile(
    r"(?:(?:Standard import|Direct module loading) failed for|Failed to import module) "
    r"(?P<name>Unsloth\w{1,80})(?::| because) (?P<msg>[^\n]{4,200}?) "
    r"\((?P=name)\.py, line (?P<line>\d{1,7})\)"
)
_SYNTAX = re.compile(r"(?P<msg>[^\n]{4,200}?) \((?P<name>Unsloth\w{1,80})\.py, line (?P<line>\d{1,7})\)")
#: Unsloth's generated trainers and configs: TRL's class rewritten by unsloth/models/rl.py
_TRAINER = re.compile(r"^Unsloth(?P<cls>\w{1,60}?(?:Trainer|Config))$")
_GENERATOR = ("models/rl.py", ("_patch_trl_rl_trainers", "_patch_trl_rl_trainers_impl"))


def generated(text: str, m: Match, log: Log, syntax: bool = False) -> Draft | None:
    """TRI014 (a warning) for a module Unsloth generated that Python cannot compile (``non-default
    argument follows default argument (UnslothGKDTrainer.py, line 625)``): Unsloth's RL patching
    rewrites TRL's trainer into unsloth_compiled_cache/UnslothXTrainer.py, and code it wrote that
    does not compile is a bug of that generator for the installed TRL's trainer, not of the user's
    script. The generator's fixes after the log's unsloth (all, without one) are named from the
    fix history; the fix is a newer unsloth and unsloth_zoo (or the TRL its release was written
    for). ``syntax``: ``text`` is a ``SyntaxError``'s own message (no compiler's words around it)."""
    g = (_SYNTAX if syntax else _GENERATED).search(text[:2000])
    if g is None:
        return None
    name, msg, line = g["name"], g["msg"].strip().rstrip(":"), g["line"]
    trainer = _TRAINER.match(name)
    pkg = "unsloth"
    h = fix_history(pkg)
    run = _shown(pkg, log)
    low = (run.low or run.version) if run is not None else None
    fixes: list[Fix] = []
    if h is not None and trainer is not None:
        module, functions = _GENERATOR
        for fn in functions:
            fixes += [f for f in h.changed(module, fn) if f.release and _newer(f.release, low, h.newest)]
    fixes.sort(key=lambda f: versions.sort_key(f.release))
    what = (
        f"{name}.py, the module Unsloth generated"
        + (f" from TRL's {trainer['cls']} (unsloth/models/rl.py rewrites it)" if trainer else "")
        + f", does not compile: {msg} (line {line}) — a bug of Unsloth's code generation for the installed "
        + ("TRL release" if trainer else "release of the code it rewrites")
        + ", not of your script"
    )
    if fixes and run is not None and run.exact:
        what += (
            f"; the log shows unsloth {run.version}: {len(fixes)} later unsloth fixes changed that "
            f"generator, the first in unsloth {fixes[0].release} ({_ref(fixes[0], h.source if h else '')}), "
            f"the newest in {fixes[-1].release}"
        )
    elif fixes:
        what += (
            f"; unsloth fixes changed that generator {len(fixes)} times, through unsloth {fixes[-1].release}"
        )
    if run is not None and run.exact:
        what += "" if fixes else f"; the log shows unsloth {run.version}"
    else:
        what += (
            "; the log shows no unsloth version: `pip show unsloth unsloth_zoo trl` tells which generated it"
        )
    newest = f" (>= {fixes[-1].release}, the newest fix of the generator envdoctor knows)" if fixes else ""
    fix = (
        f"pip install --upgrade unsloth unsloth_zoo{newest}: the run writes {name}.py again with the fixed "
        "generator; or pin trl to the release your unsloth release was written for (its pyproject's trl "
        "bound)"
    )
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        package=pkg,
        generated=f"{name}.py",
        generated_line=int(line),
        function=f"{_GENERATOR[0]}:{_GENERATOR[1][0]}" if trainer else None,
        fixed_in=fixes[-1].release if fixes else None,
        matched="generated code that does not compile",
        located_by="unsloth_compiled_cache",
    )
    return at_severity(d, Severity.WARNING)


def generated_in(head: bytes, log: Log) -> Draft | None:
    """``generated`` on a short paste's lines (``raisesites.quoted_lines``): Unsloth's compiler
    reports a generated module that does not compile on a log line of its own, not an exception's."""
    from envdoctor.triage.raisesites import quoted_lines

    for m, tb in quoted_lines(head):
        d = generated(tb.message, m, log)
        if d is not None:
            return d
    return None
