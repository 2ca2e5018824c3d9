"""Where a log cut inside a traceback stopped, and the known failures raised there (TRI003).

A pasted excerpt often ends before its exception's line. The frames still say where the run was:
the deepest frame shown, and the last package boundary before it (package A's function calling
into package B). ``stop`` reads both; ``candidates`` looks up what envdoctor knows is raised from
exactly there, and only where the frames discriminate:

1. a catalogue entry whose ``raised.frames`` name the deepest frame's package, file and (a
   specific) function, on a log whose versions fall in the entry's ranges;
2. a catalogue entry whose symptom is the deepest frame's statement itself (an entry that quotes
   the failing source line), or the message literal of the ``raise`` / ``assert`` it shows;
3. an import the deepest frame makes (``from X import Y``) of a name that the log's own version
   of X lacks (envdoctor's symbol history);
4. a catalogue entry raised as the deepest frame's statement raises (``raise KeyError(key)``): its
   exception, in its own frame's package and file;
5. a catalogue entry whose import fails while its package is imported (an ``ImportError`` raised
   at a ``raised.frames`` frame of the package whose function is ``<module>``), where the log
   stopped inside that package's import chain (the deepest frame is the package's module-level
   code running an import).

Versions the log shows that fall outside an entry's ranges rule it out. A candidate is never an
error: the exception is not shown. Where nothing discriminates (a frame in the entry's file that
is a call, a function every failure passes through), the finding says where the log stopped and
asks for the exception line. ``raised_line``: a package's ``raise SomeError("literal")`` that the
paste shows whole is the exception line it prints, diagnosed as any (a warning at most).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from envdoctor.knowledge.failures import KnownFailure
from envdoctor.triage.draft import Draft, Log
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Frame, Traceback
from envdoctor.triage.traceback_model import python_own_path

MAX_CANDIDATES = 3  # known failures offered
#: functions so common that a frame in one says nothing of which failure it raised
_GENERIC_FUNCTIONS = frozenset(
    {
        "",
        "__init__",
        "__call__",
        "forward",
        "wrapper",
        "inner",
        "<module>",
        "main",
        "train",
        "run",
        "_call_impl",
        "_wrapped_call_impl",
        "decorate_context",
        "step",
        "__getattr__",
        "__getitem__",
    }
)
_IMPORTS = re.compile(r"^(?:from [\w.]{1,200} import |import [\w.]{1,200})")
MODULE = "<module>"  # the function of a frame running a module's top-level code (its import)
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})
_FROM_IMPORT = re.compile(r"^from (?P<module>[A-Za-z_][\w.]{0,200}) import \(?(?P<names>[\w, ]{1,400})\)?$")
_RAISE = re.compile(r"^raise (?:[\w]{1,60}\.){0,4}(?P<type>[A-Z]\w{0,60})\b")
_LITERAL = re.compile(r"""(?P<q>"|')(?P<s>(?:\\.|(?!(?P=q)).){4,1000})(?P=q)""")


@dataclass(frozen=True)
class Stop:
    """The deepest frame a cut traceback shows and, where the run crossed into its package from
    another one, the caller's frame (A) and the callee's first frame (B)."""

    deepest: Frame
    caller: Frame | None
    callee: Frame | None


@dataclass(frozen=True)
class Candidate:
    """A known failure raised where the log stopped: its id, title, why it fits, its fix."""

    id: str
    title: str
    why: str
    fix: str
    sources: tuple[str, ...] = ()


#: frames that hand a call on (decorators, nn.Module's dispatch, fire's): no package's own step
_PASS_THROUGH = frozenset(
    {
        "wrapper",
        "inner",
        "decorator",
        "decorate_context",
        "_call_impl",
        "_wrapped_call_impl",
        "_CallAndUpdateTrace",
        "_Fire",
        "Fire",
        "auto_init_wrapper",
        "context_decorator",
        "wrapped_fn",
    }
)


def _passes(f: Frame) -> bool:
    return f.function.rsplit(".", 1)[-1] in _PASS_THROUGH


def stop(tb: Traceback) -> Stop | None:
    """The deepest frame and the last call from one package (or the user's code) into another
    before it, the frames above it that only hand the call on left out."""
    if not tb.frames:
        return None
    deepest = tb.frames[-1]
    steps = [f for f in tb.frames[:-1] if not _passes(f)] + [deepest]
    for i in range(len(steps) - 1, 0, -1):
        a, b = steps[i - 1], steps[i]
        if b.package and a.package != b.package:
            return Stop(deepest, a, b)
    return Stop(deepest, None, None)


def _statement(f: Frame) -> str:
    return " ".join(f.code.split())[:1000]


def _entries() -> list[KnownFailure]:
    from envdoctor.triage import catalogue

    return list(catalogue.catalogue()[2].values())


def _own_frame(e: KnownFailure, f: Frame, log: Log, specific: bool) -> tuple[str, str, str] | None:
    """``(file, function, versions detail)`` where the deepest frame ``f`` is one of entry ``e``'s
    ``raised.frames`` (its package, its file, and its function where it names one; with
    ``specific`` only a named function that is no generic step) and the log's versions do not rule
    ``e`` out (with ``specific``: they must confirm it); None otherwise."""
    from envdoctor.triage.classes import versions_verdict

    if not e.raised or not f.package:
        return None
    for package, file, function in e.raised[2]:
        if package != f.package or not file or not f.module_path.endswith(file):
            continue
        if specific and function in _GENERIC_FUNCTIONS:
            continue
        if (function or specific) and f.function.split(".")[-1] != function.split(".")[-1]:
            continue
        verdict, detail = versions_verdict(dict(e.packages), log)
        if verdict is True or (verdict is None and not specific):
            return file, function, detail if verdict else ""
    return None


def _by_frame(e: KnownFailure, f: Frame, log: Log) -> str:
    """Why entry ``e`` fits the deepest frame by its ``raised.frames`` (1), or ""."""
    found = _own_frame(e, f, log, specific=True)
    if found is None or not f.package:
        return ""
    file, function, detail = found
    return f"it is raised in {_whose(f.package)} {function} ({file}), the deepest frame; {detail}"


def _by_statement(e: KnownFailure, f: Frame, log: Log) -> str:
    """Why entry ``e`` fits the deepest frame's source line or its message literal (2), or ""."""
    from envdoctor.triage.classes import versions_verdict

    code = _statement(f)
    if not code or not f.package:
        return ""
    literal = ""
    if code.startswith(("raise ", "assert ")):
        literal = " ".join(m.group("s") for m in _LITERAL.finditer(code))
    for s in e.symptoms:
        if len(s.text) < 16 and not s.text.startswith("re:"):
            continue  # too short to tell a statement apart
        if s.found_in(code) or (literal and s.found_in(literal)):
            if e.raised and e.raised[2] and not any(p == f.package for p, _, _ in e.raised[2]):
                continue  # the entry's own frames are another package's
            verdict, detail = versions_verdict(dict(e.packages), log)
            if verdict is False:
                continue
            shown = f"; {detail}" if verdict else ""
            return f"its symptom is the deepest frame's statement (`{code[:160]}`){shown}"
    return ""


def _whose(package: str) -> str:
    return f"{package}'" if package.endswith("s") else f"{package}'s"


def _raised_type(code: str) -> str:
    m = _RAISE.match(code)
    return m.group("type") if m else ""


def _by_raise(e: KnownFailure, f: Frame, log: Log) -> str:
    """Why entry ``e`` fits: the deepest frame's statement raises the entry's exception, in the
    entry's own frame (package, file, function where it names one) (4), or ""."""
    kind = _raised_type(_statement(f))
    if not e.raised or not kind or not f.package or e.raised[0].rsplit(".", 1)[-1] != kind:
        return ""
    found = _own_frame(e, f, log, specific=False)
    if found is None:
        return ""
    file, _function, detail = found
    shown = f"; {detail}" if detail else ""
    code = _statement(f)[:120]
    return f"the deepest frame's statement `{code}` is its raise, in {_whose(f.package)} {file}{shown}"


def _by_import_chain(e: KnownFailure, f: Frame, log: Log) -> str:
    """Why entry ``e`` fits: the log stopped while ``f``'s package was being imported (its
    module-level code running an import) and ``e`` is an import of that package's that fails (5),
    its versions not ruled out; or "". An entry raising another exception at import (a release
    refused) is not offered: the import statement the log stopped at says nothing of it."""
    from envdoctor.triage.classes import versions_verdict

    if not e.raised or e.raised[0] not in _IMPORT_ERRORS:
        return ""
    if not f.package or f.function != MODULE or not _IMPORTS.match(_statement(f)):
        return ""
    files = [file for p, file, function in e.raised[2] if p == f.package and function == MODULE]
    if not files:
        return ""
    verdict, detail = versions_verdict(dict(e.packages), log)
    if verdict is False:
        return ""
    shown = f"; {detail}" if verdict else ""
    return (
        f"the log stopped while {f.package} was being imported ({f.at}), and it is an import of"
        f" {_whose(f.package)} that fails ({e.raised[0]}, in {files[0]}){shown}"
    )


def _by_import(f: Frame, log: Log) -> Candidate | None:
    """The deepest frame imports a name its log's version of the module's package lacks (3)."""
    from envdoctor.triage import symbols

    m = _FROM_IMPORT.match(_statement(f))
    if m is None:
        return None
    have = {d: v.version for d, v in log.versions.items() if v.exact and not v.inferred}
    module = m.group("module")
    for name in [n.strip() for n in m.group("names").split(",") if n.strip()][:8]:
        msg = f"cannot import name '{name}' from '{module}'"
        v = symbols.verdict(Traceback(list([f]), "ImportError", msg), have)
        if v is None or v.placed != "lacks" or not v.shown:
            continue
        who = f.package or "the code"
        what = f"{who} imports {name} from {module}, which {v.package} {v.shown} (the log's) lacks"
        fix = (
            f"install the {v.package} release the importing package supports "
            f"(its requirements), or a release of {who} written for {v.package} {v.shown}"
        )
        return Candidate("import-drift", f"{module}.{name} is not in {v.package} {v.shown}", what, fix)
    return None


def candidates(tb: Traceback, log: Log) -> list[Candidate]:
    """The known failures raised where the cut traceback stopped, best first (module docstring)."""
    where = stop(tb)
    if where is None:
        return []
    f = where.deepest
    out: list[Candidate] = []
    for e in _entries():
        why = (
            _by_raise(e, f, log)
            or _by_statement(e, f, log)
            or _by_frame(e, f, log)
            or _by_import_chain(e, f, log)
        )
        if why:
            out.append(Candidate(e.id, e.title, why, e.fix, tuple(e.sources)))
    drift = _by_import(f, log)
    if drift is not None:
        out.append(drift)
    return out[:MAX_CANDIDATES]


def _version(log: Log, package: str | None) -> str:
    v = log.versions.get(package) if package else None
    if v is None:
        return ""
    return f" {v.range_text()}" + (" (inferred from its frames)" if v.inferred else "")


def _at(f: Frame, log: Log) -> str:
    """``vllm 0.8.3 LLM.__init__ (entrypoints/llm.py:243)``; ``your code main (train.py:12)``."""
    if f.package:
        who = f"{f.package}{_version(log, f.package)}"
    else:
        path = f.path.replace("\\", "/")
        who = "Python" if python_own_path(path) else "your code"
    return f"{who} {f.function + ' ' if f.function else ''}({f.at})"


def where_text(tb: Traceback, log: Log) -> str:
    """Where the log stopped: the deepest frame, and the call across the last package boundary,
    with the versions of both packages the log shows."""
    where = stop(tb)
    if where is None:
        return ""
    text = f"; it stopped in {_at(where.deepest, log)}"
    if where.caller is not None and where.callee is not None:
        callee = "it" if where.callee is where.deepest else _at(where.callee, log)
        text += f", inside the last call across packages: {_at(where.caller, log)} → {callee}"
    return text


def offer_text(found: list[Candidate]) -> str:
    """The known failures raised where the log stopped, as candidates (the exception is not shown)."""
    parts = [f"{c.title} ({c.id}): {c.why}" for c in found]
    return "known failures raised there, which the exception line would confirm: " + "; or ".join(parts)


def offer_fix(found: list[Candidate]) -> str:
    return "if it is " + found[0].id + ": " + found[0].fix.rstrip(".")


_RAISE_CALL = re.compile(
    r"^raise (?:[\w]{1,60}\.){0,4}(?P<type>[A-Z]\w{0,60}(?:Error|Exception))\((?P<rest>.{0,2000})$"
)
MIN_MESSAGE = 20  # characters of a raise's literal message read as the exception's line
_CUT_NOTE = (
    "; the log ends inside the traceback, at this raise: its message is the statement's own literal "
    "(paste the exception line to confirm)"
)


def raised_line(
    tb: Traceback,
    lines: list[str],
    log: Log,
    total: int,
    diagnose_failure: Callable[[Match, Log], Draft | None],
) -> Draft | None:
    """The deepest frame is a package's ``raise SomeError("literal message")`` that the paste shows
    whole: read as the exception line it prints, diagnosed as any failing line by
    ``diagnose_failure`` (structural's, handed in: this module sits below it); a known answer
    at a warning at most (the exception itself is not shown)."""
    from envdoctor.findings import Finding, Severity
    from envdoctor.triage.cutguard import _literal, _match
    from envdoctor.triage.cutguard import _statement as whole

    if not tb.frames or tb.frames[-1].package is None:
        return None
    r = _RAISE_CALL.match(whole(tb.frames[-1], lines))
    if r is None:
        return None
    message = _literal(r.group("rest"))
    if len(message) < MIN_MESSAGE or message.endswith(" …") or "{" in message:
        return None  # no message, one cut off, or one whose values the source does not show
    m = _match(lines, total, f"{r.group('type')}: {message}")
    if m is None:
        return None
    d = diagnose_failure(m, log)
    if d is None or d.finding.rule == "TRI003":
        return None
    f = d.finding
    severity = Severity.WARNING if f.severity == Severity.ERROR else f.severity
    d.finding = Finding(f.rule, severity, f.message + _CUT_NOTE, f.fix, {**f.evidence, "cut_traceback": True})
    return d
