"""A name one package of the stack defines in some releases only, not defined where code uses it
(TRI009: API drift).

Code that binds another package's name only when its import succeeds (``if
is_accelerate_available("1.10.1"): from accelerate.parallelism_config import ParallelismConfig``),
names it in a string annotation resolved later (transformers' ``TrainingArguments`` annotates
``parallelism_config: Optional["ParallelismConfig"]``, which ``HfArgumentParser`` resolves:
``RuntimeError: Type resolution failed for <class '…DPOConfig'>`` over ``NameError: name
'ParallelismConfig' is not defined``), or runs code compiled from another package's source (a
``File "<string>"`` frame, a module of ``unsloth_compiled_cache``), fails with a ``NameError`` when
the installed release of the package that defines the name (B) lacks it. The symbol history
(rules/knowledge/symbols/) says which one package defines the name and in which releases: the
release where it appeared or vanished and the range of B that has it.

An error where the log's B lacks the name, a warning where the log shows no B. Quiet where no
package, or several, define the name; where every release read has it; where the log's B has it;
for the user's own frame (TRI013's guarded import) and B's own frame (a bug of B's release: TRI014);
and for a package's frame whose package never binds the name (its missing import: TRI014).
"""

from __future__ import annotations

import builtins
import re

from envdoctor.findings import Severity
from envdoctor.knowledge import symbol_history
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.missing import exact_version
from envdoctor.triage.traceback import PACKAGES, Frame, Traceback

HISTORY = "the symbol history (rules/knowledge/symbols/)"
_UNDEFINED = re.compile(r"^name '(?P<name>[A-Za-z_]\w{0,200})' is not defined")
_RESOLUTION = re.compile(r"Type resolution failed for <class '(?P<cls>[A-Za-z_][\w.]{0,300})'>")
_NAME_LINE = re.compile(r"NameError: name '(?P<name>[A-Za-z_]\w{0,200})' is not defined")
_COMPILED = re.compile(r"unsloth_compiled_cache/|^<string>$|^<(?:unknown|exec)>$")
NEAR = 12  # lines after a type-resolution failure that may hold its NameError (pytest's ``E`` lines)
MIN_NAME = 6  # names too short to tell a package by


def _resolution_name(t: Traceback, m: Match, log: Log) -> str | None:
    """The name a ``Type resolution failed`` RuntimeError could not resolve: its cause in the
    chain, else a NameError line just after it (pytest prints the cause below the failure)."""
    for c in reversed(t.chain):
        found = _UNDEFINED.match(c.message.strip()) if c.name == "NameError" else None
        if found is not None:
            return found.group("name")
    if not log.head or m.line_no <= 0:
        return None
    after = log.head.decode("utf-8", errors="replace").split("\n")[m.line_no : m.line_no + NEAR]
    for line in after:
        found = _NAME_LINE.search(line[:1000])
        if found is not None:
            return found.group("name")
    return None


def _binds(pkg: str, name: str) -> list[str]:
    """The modules of ``pkg``'s history that bind ``name`` without defining it (an import)."""
    h = symbol_history.history(pkg)
    if h is None:
        return []
    have, where = h.name_anywhere(name)
    return sorted(w for w in where if have and not h.defines(w, name))


def _owner(name: str) -> tuple[symbol_history.History, int, str] | None:
    """The one package that defines ``name`` in a public module: its history, the releases that
    bind it, the module; None where none or several do."""
    found = []
    for pkg in symbol_history.packages():
        h = symbol_history.history(pkg)
        if h is None:
            continue
        have, where = h.name_anywhere(name)
        defining = sorted(
            (w for w in where if h.defines(w, name) and not any(p.startswith("_") for p in w.split("."))),
            key=lambda w: (w.count("."), w),
        )
        if have and defining:
            found.append((h, have, defining[0]))
    return found[0] if len(found) == 1 else None


def _module_of(frame: Frame) -> str:
    """The dotted module of a package's frame (``transformers.training_args``)."""
    from envdoctor.triage.symbols import _import_name

    inner = frame.module_path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    top = _import_name(str(frame.package))
    return f"{top}.{inner}" if inner and inner != "__init__" else top


def undefined_name(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI009 for a NameError on a name one package defines in some releases only (module
    docstring), or None."""
    if warning_line(m) or t.name not in ("NameError", "RuntimeError"):
        return None
    cls = ""
    if t.name == "RuntimeError":
        r = _RESOLUTION.search(t.message)
        name = _resolution_name(t, m, log) if r is not None else None
        cls = r.group("cls") if r is not None else ""
    else:
        u = _UNDEFINED.match(t.message.strip())
        name = u.group("name") if u is not None else None
    if name is None or len(name) < MIN_NAME or name in dir(builtins):
        return None
    frame = t.frames[-1] if t.frames and not cls else None
    compiled = frame is not None and bool(_COMPILED.search(frame.path.replace("\\", "/")))
    if not cls and (frame is None or (frame.package is None and not compiled)):
        return None  # no frame, or the user's code: TRI013's guarded import (or the code's own name)
    owned = _owner(name)
    if owned is None:
        return None  # no package's name (the code's own), or several define it
    h, have, module = owned
    if have == h.full:
        return None  # every release read has it: no release lacks it
    b = h.package
    caller, bound = None, []
    if cls:
        binders = [p for p in symbol_history.every() if p != b and _binds(p, name)]
        caller = binders[0] if len(binders) == 1 else PACKAGES.get(cls.split(".")[0])
        bound = _binds(caller, name) if caller else []
    elif frame is not None and frame.package is not None and not compiled:
        if frame.package == b:
            return None  # B's own code: a bug of its release (TRI014)
        bound = [w for w in _binds(frame.package, name) if w == _module_of(frame)]
        if not bound:
            return None  # the package never binds it there: its own missing import (TRI014)
        caller = frame.package
    from envdoctor.triage.symbols import Verdict, _drift_shape, _place

    v = _drift_shape(Verdict(b, f"{name} ({b}'s {module})", h.releases, have, h.full))
    if v is None:
        return None
    version = exact_version(log, b)
    v = _place(v, version)
    if v.contradicted or _has_past(v):
        return None  # the log's B has it: another cause (TRI013 / TRI003)
    return _draft(t, m, log, v, name, caller, bound, cls, frame, compiled)


def _poss(pkg: str) -> str:
    return f"{pkg}'" if pkg.endswith("s") else f"{pkg}'s"


def _has_past(v: object) -> bool:
    """The log's B lies outside the history, on the side whose end release has the name."""
    from envdoctor.triage.symbols import Verdict

    assert isinstance(v, Verdict)
    if v.placed == "newer":
        return bool(v.works >> (len(v.releases) - 1) & 1)
    return v.placed == "older" and bool(v.works & 1)


def _draft(
    t: Traceback,
    m: Match,
    log: Log,
    v: object,
    name: str,
    caller: str | None,
    bound: list[str],
    cls: str,
    frame: Frame | None,
    compiled: bool,
) -> Draft:
    from envdoctor.triage.symbols import Verdict

    assert isinstance(v, Verdict)
    b = v.package
    where = f"{_poss(caller)} {bound[0]}" if caller and bound else caller or ""
    if cls:
        who = caller or "the calling code"
        how = (
            f"resolving the string annotations of {cls} (typing.get_type_hints, as transformers' "
            f"HfArgumentParser does) reads '{name}'"
            + (f", which {where} binds by importing it from {b}" if bound else "")
        )
    elif compiled:
        assert frame is not None
        who = "the generated code"
        how = (
            f"code compiled from another package's source ({frame.function or 'code'} at {frame.at}) uses "
            f"'{name}', which nothing binds in the namespace it runs in"
        )
    else:
        assert frame is not None
        who = str(caller)
        how = (
            f"{_poss(str(caller))} {frame.function or 'code'} ({frame.at}) uses '{name}', which {where} "
            f"binds by importing it from {b}"
        )
    runs = v._runs()
    a_idx, last = runs[-1]
    gone = last < len(v.releases) - 1
    fits = v.fits()
    if not gone:
        fix = (
            f"pip install --upgrade '{b}>={v.releases[a_idx]}' ({v.said()}; --upgrade takes the newest, "
            f"which also meets a version guard of the importing code that asks a later {b})"
        )
        other = f"install the {caller} release made for the installed {b}" if caller else ""
    else:
        fix = f"pip install '{b}{fits}' ({v.said()})"
        other = (
            f"upgrade {caller} to a release written for {b} {v.releases[last + 1]} or newer "
            f"(pip install --upgrade {caller})"
            if caller
            else ""
        )
    if other:
        fix += f"; or {other}"
    shown = f"the log shows {b} {v.shown}" if v.shown else f"the log shows no {b} version"
    if not v.shown:
        shown += f" (`pip show {b}` tells which)"
    what = f"API drift between {who} and {b}: {how} — {v.text()}: the two releases do not fit; {shown}"
    d = finding(
        "TRI009",
        [m],
        log,
        what,
        fix,
        caller=caller,
        callee=b,
        exception=t.name,
        name=name,
        answer_from=HISTORY,
        boundary_from="history",
    )
    return at_severity(d, Severity.ERROR if v.placed in ("lacks", "older", "newer") else Severity.WARNING)
