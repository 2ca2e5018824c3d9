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

The history is read only for a traceback that has a frame in a package it covers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.knowledge.fix_history import Fix, fix_history, line_hash, packages
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.logversions import LogVersion
from envdoctor.triage.traceback import Frame, Traceback

RULE = "TRI014"
MAX_FRAMES = 4  # frames of the raising package looked at: the innermost and those above it
MAX_NAMED = 3  # candidate fixes named in a finding
MAX_WEAK = 3  # fixes after the log's version that may be named without matching the failure

LINE = "it removed the very line the traceback shows"
QUOTED = "its message quotes the same failure at the same frame"  # a traceback like the log's
QUOTED_EXC = "its message quotes the same exception"
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
    frames = [_own(f) for f in t.frames]
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


def _matches(fix: Fix, frame: Frame, t: Traceback, words: set[str], line: bool = True) -> str:
    """What of the failure ``fix`` matches: the raising line, a traceback its message quotes, the
    exception, the message's words, the function; "" for nothing (``line=False``: what its subject
    names only)."""
    if line and frame.code and line_hash(frame.code) in fix.removed:
        return LINE
    if line:
        said = _quotes(fix, frame, t)
        if said == QUOTED or said and not _drift_shaped(t):
            return said
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
    return 0 if why in (LINE, QUOTED) else 3 if not why else 2 if why.startswith(FUNCTION) else 1


def _newer(release: str, shown: str | None, newest: str = "") -> bool:
    """A fix first released in ``release`` is not in ``shown`` (None: unknown). A fix in no
    release yet (``release`` "") is in none of the releases up to ``newest``; a version after the
    newest release envdoctor knows may be a build from the branch that has it: not told."""
    if not release:
        return shown is None or not newest or not versions.below(newest, shown)
    return shown is None or versions.below(shown, release)


def _candidates(pkg: str, frames: list[Frame], t: Traceback, shown: str | None) -> list[Candidate]:
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
            if fix.commit in seen or not _newer(fix.release, shown, newest):
                continue
            seen.add(fix.commit)
            out.append(Candidate(fix, frame, _matches(fix, frame, t, words), depth))
    callee = _CALLEE.search(t.message[:300]) if t.name == "TypeError" else None
    if callee is not None and frames:
        # a call inside the package that does not fit the package's own method: the fixes of
        # that method count at the calling frame (a traceback quoted in one shows that frame)
        for fix in h.named(callee["callee"]):
            if fix.commit in seen or not _newer(fix.release, shown, newest):
                continue
            seen.add(fix.commit)
            why = _matches(fix, frames[0], t, words)
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


def _where(f: Frame) -> str:
    at = f"{f.module_path}:{f.line}" if f.line else f.module_path
    return f"{at} in {f.function}" if f.function else at


def _ref(fix: Fix, source: str) -> str:
    ref = f"{source}#{fix.number}" if fix.number and source else (f"#{fix.number}" if fix.number else "")
    return f"“{fix.subject}” ({ref + ', ' if ref else ''}commit {fix.commit[:10]}, {fix.date})"


def fixed_after(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI014 for the exception ``t`` (module docstring), or None."""
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
    below = _own(t.frames[-1]).package if _own(t.frames[-1]).package != pkg else None
    run = _shown(pkg, log)
    shown = run.version if run is not None and run.exact else None
    # fixes after the oldest release the run may have (its version, or its frames' range)
    cands = _candidates(pkg, frames, t, (run.low or run.version) if run is not None else None)
    if not cands:
        return None
    h = fix_history(pkg)
    newest = h.newest if h is not None else ""
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
    # the log's version is older than the fix, or the raising line it prints is one the fix
    # removed (the run had the code before the fix), or the fix's message quotes this very
    # failure at this frame; and the fix matches the failure
    matched = bool(best.why) and not best.why.startswith(FUNCTION)
    before = _before(run, best.fix.release, newest)
    # the traceback shows a line the fix removed: the run had the code before it; in a caller's
    # frame that is the failure's place only when the fix's subject names the failure too
    removed = best.why == LINE and (
        (best.depth == 0 and below is None)
        or _strength(_matches(best.fix, best.frame, t, _message_words(t), line=False)) == 1
    )
    # the fix's message quotes this failure at this frame; a range of releases the run may have
    # that reaches the fix's release leaves open whether it had it
    # (its traceback's innermost frame of the package is this one: what raised below it, in
    # another package, is the same too)
    quoted = best.why == QUOTED and best.depth == 0 and (run is None or before)
    certain = matched and (before or removed or quoted)
    source = h.source if h is not None else ""
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
        f"{raised} — {place} ({_where(best.frame)}), {changed} "
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
    others = pool[1:MAX_NAMED]
    if others:
        what += "; other fixes of the same frames: " + "; ".join(
            f"{_ref(c.fix, source)} in {c.fix.release or 'no release yet'}" for c in others
        )
    if released:
        fix = f"pip install '{pkg}=={released}' (the first release with that fix; a later one has it too)"
    else:
        fix = _from_source(pkg, best.fix, source, h.subdir if h is not None else "")
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
        unreleased=not best.fix.release or None,
        commit=best.fix.commit,
        number=best.fix.number or None,
        shown=shown,
        inferred=run.range_text() if run is not None and run.inferred else None,
        inferred_from=list(run.frames) if run is not None and run.inferred else None,
        matched=best.why or None,
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
    fixes = [
        f
        for f in h.changed(frame.module_path, _function(frame))
        if removed in f.removed and _newer(f.release, low, h.newest)
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
