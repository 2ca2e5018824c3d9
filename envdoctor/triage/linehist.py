"""API drift answered with the release that changed the raising line (TRI014, from the line history).

A package's call that no longer fits the code around it — an attribute an object lacks, a name
an import cannot find, a keyword a callee no longer takes — is often fixed upstream by a commit
no fix history keeps (its subject says no "fix": "latest bnb no longer has optim_args attribute
on optimizer", huggingface/accelerate#3311). The line history (rules/knowledge/linehist/,
scripts/derive_line_history.py) keeps, per function, the lines any commit removed together with
the names the function stopped using with it. For a drift-shaped exception raised in a frame of
such a package, the line the traceback prints under that frame is looked up there:

* the failure's name (``'AdamW' object has no attribute 'optim_bits'``: ``a:optim_bits``; the bare
  ``AttributeError: name`` an attribute hook raised for its caller, ``raisethrough``) must be
  one the change dropped from that function (not used after it, or only inside a ``try`` that
  catches this exception: the line that failed is gone); a refactor that kept the name is no
  change of the history;
* an error where the printed line is one the change removed (the run had the code before it) or
  the log's version of the package is older than the change's first release; a warning where
  only the statement around the printed line changed and the log shows no version; nothing where
  the log's version already has the change or the frame prints a line no change removed.

The fix is the first release that holds the change. Read only for a traceback with a frame of a
package the history covers and a drift-shaped message; the static check never reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.knowledge.fix_history import line_hash
from envdoctor.knowledge.line_history import Change, line_history, packages
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.raisethrough import bare_name
from envdoctor.triage.traceback import Frame, Traceback

RULE = "TRI014"
MAX_FRAMES = 4  # frames of the package looked at: the innermost and those above it

_ATTR = re.compile(r"has no attribute '(?P<n>[A-Za-z_]\w{0,200})'")
_IMPORT = re.compile(r"cannot import name '(?P<n>[A-Za-z_]\w{0,200})'")
_MODULE = re.compile(r"No module named '(?P<n>[A-Za-z_][\w.]{0,200})'")
_NAME = re.compile(r"^name '(?P<n>[A-Za-z_]\w{0,200})' is not defined")
_KEYWORD = re.compile(r"got an unexpected keyword argument '(?P<n>[A-Za-z_]\w{0,200})'")
_ARITY = re.compile(
    r"(?P<n>[A-Za-z_][\w.]{0,200})\(\) (?:missing \d+ required (?:positional|keyword-only) argument|"
    r"takes (?:from )?\d+ (?:to \d+ )?positional arguments? but)"
)


def drift_names(t: Traceback) -> tuple[str, ...]:
    """The names (by role, the derive script's) a drift-shaped exception is about, or () for none."""
    msg = t.message[:500]
    name = t.name
    if name == "AttributeError" and (m := _ATTR.search(msg)):
        # a None where an object was expected is a value's bug, not a call that drifted
        return () if msg.startswith("'NoneType' object") else (f"a:{m['n']}",)
    if name == "AttributeError" and (bare := bare_name(t)):  # ``del x.name`` in a hook: the name alone
        return (f"a:{bare}",)
    if name in ("ImportError", "ModuleNotFoundError"):
        if m := _IMPORT.search(msg):
            return (f"i:{m['n']}",)
        if m := _MODULE.search(msg):
            return (f"m:{m['n']}",)
        return ()
    if name == "NameError" and (m := _NAME.search(msg)):
        return (f"n:{m['n']}",)
    if name == "TypeError":
        if m := _KEYWORD.search(msg):
            return (f"k:{m['n']}",)
        if m := _ARITY.search(msg):
            parts = m["n"].split(".")
            callee = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]
            if callee.startswith("<") or callee == "__init__":
                return ()
            return (f"n:{callee}", f"a:{callee}")
    return ()


def _fits(change: Change, want: tuple[str, ...]) -> bool:
    for w in want:
        if w in change.names:
            return True
        if w.startswith("m:"):  # the module a failed import named, or a package above it
            missing = w[2:]
            if any(n.startswith("m:") and (n[2:] + ".").startswith(missing + ".") for n in change.names):
                return True
    return False


def _function(f: Frame) -> str:
    name = f.function.strip()
    if name == "<module>":
        return name
    return "" if not name or name.startswith("<") else name


@dataclass
class _Hit:
    change: Change
    frame: Frame
    printed: bool  # the printed line is the change's line


def _hits(pkg: str, frames: list[Frame], want: tuple[str, ...]) -> list[_Hit]:
    h = line_history(pkg)
    if h is None:
        return []
    out: list[_Hit] = []
    for depth, f in enumerate(frames):
        fn = _function(f)
        if not fn:
            continue
        changes = [c for c in h.changes(f.module_path, fn) if c.release and _fits(c, want)]
        if f.code.strip():
            line = line_hash(f.code)
            out += [_Hit(c, f, True) for c in changes if c.line == line]
        elif depth == 0:  # no line printed: the innermost frame's function, by the name alone
            out += [_Hit(c, f, False) for c in changes]
    return out


def _ref(c: Change, source: str) -> str:
    ref = f"{source}#{c.number}" if c.number and source else (f"#{c.number}" if c.number else "")
    return f"“{c.subject}” ({ref + ', ' if ref else ''}commit {c.commit[:10]}, {c.date})"


def changed_line(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI014 for a drift-shaped exception ``t`` whose frame in a package with a line history prints
    a line a later release's change removed with the name the exception names (module docstring)."""
    want = drift_names(t)
    if not want or not t.frames:
        return None
    from envdoctor.triage.fixhist import _own, _shown

    have = set(packages())
    frames = [_own(f) for f in t.shown_frames()]  # up to the frame an attribute hook raised for
    pkg = next((f.package for f in reversed(frames) if f.package in have), None)
    if pkg is None:
        return None
    run: list[Frame] = []
    for f in reversed(frames):
        if f.package == pkg:
            run.append(f)
        elif run:
            break
    hits = _hits(pkg, run[:MAX_FRAMES], want)
    if not hits:
        return None
    h = line_history(pkg)
    if h is None:
        return None
    shown = _shown(pkg, log)
    low = (shown.low or shown.version) if shown is not None else None
    # a change the run's release already has is not its fix
    hits = [x for x in hits if low is None or versions.below(low, x.change.release)]
    if not hits:
        return None
    # the line itself removed first, then the earliest release that holds a change
    hits.sort(key=lambda x: (not (x.printed and x.change.removed), versions.sort_key(x.change.release)))
    best = hits[0]
    c = best.change
    # the log's version, or the newest release its frames fit, is older than the change's release
    before = shown is not None and not shown.newest and versions.below(shown.version, c.release)
    removed = best.printed and c.removed
    certain = removed or before
    name = next(n for n in want if _fits(c, (n,)))[2:]
    raised = f"{t.name}: {t.message[:200]}"
    at = best.frame.at
    how = (
        "removed the very line the traceback shows"
        if removed
        else "changed the statement of the line the traceback shows"
        if best.printed
        else "changed that function"
    )
    what = (
        f"{raised} — raised at {pkg}'s {at} in {best.frame.function}; a later {pkg} change {how} and "
        f"with it {c.function}()'s use of '{name}': {_ref(c, h.source)}, first released in {pkg} "
        f"{c.release}: the line that failed is gone from that release"
    )
    if shown is not None and shown.exact:
        what += f"; the log shows {pkg} {shown.version}, older than {c.release}"
    elif shown is not None:
        what += f"; the traceback's frames place the run at {pkg} {shown.range_text()}" + (
            f", older than {c.release}" if before else ""
        )
    elif removed:
        what += f"; the run had {pkg}'s code from before that change (the log shows no {pkg} version)"
    else:
        what += f"; the log shows no {pkg} version: `pip show {pkg}` tells whether the run had it"
    fix = f"pip install '{pkg}>={c.release}' (the first release without the line that failed)"
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        package=pkg,
        function=c.function,
        module=c.module,
        fixed_in=c.release,
        commit=c.commit,
        number=c.number or None,
        shown=shown.version if shown is not None and shown.exact else None,
        name=name,
        matched=how,
        located_by="line history: the change that dropped the name the exception names",
    )
    return at_severity(d, Severity.ERROR if certain else Severity.WARNING)
