"""API drift of a call's arguments told by the signature history (rules/knowledge/signatures/).

A ``TypeError`` of a call's arguments (``got an unexpected keyword argument 'k'``, ``missing 2
required positional arguments: 'a' and 'b'``, ``takes 2 positional arguments but 3 were given``)
raised where one package calls another is the callee's signature changing under the caller. The
symbol history knows which parameter names a function takes; the signature history (the functions
whose parameter list changed between releases, derive script scripts/derive_signature_history.py)
knows which are required, which keyword-only, how many a call may pass by position. From it:

* the releases of the callee whose signature fits the call as the message shows it (``works``);
* the releases whose signature gives that very message (``raised``: the message places the
  installed release even where the log shows no version);
* the change between them, with the signature on each side.

Only for a function the message names that one package's history has (by class and name, or a
module-level function's name): a name several functions share with different histories, a
function the user's code defines (a frame of theirs of that name), or a name no history has, gets
no verdict.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from envdoctor.knowledge import signature_history as sh
from envdoctor.triage.traceback import Traceback

_NAMES = re.compile(r"'(\w{1,200})'")
_BUILTIN = frozenset(("object", "type", "function", "method", "super", "dict", "list", "tuple", "str"))


def _token(p: str) -> str:
    return "**kwargs" if p == "**" else f"{p[:-1]}=…" if p.endswith("=") else p


def _diff(old: sh.Signature, new: sh.Signature) -> str:
    """What changed between two signatures: ``num_workers, rank added``, ``reward_funcs →
    reward_funcs=…``, ``inputs → generation_batch``; the whole signatures where it is not short."""
    a = [p for p in old.text.lstrip("!").split(",") if p]
    b = [p for p in new.text.lstrip("!").split(",") if p]
    name = {p.rstrip("=").lstrip("*"): p for p in a}
    name_b = {p.rstrip("=").lstrip("*"): p for p in b}
    added = [_token(p) for k, p in name_b.items() if k not in name]
    gone = [_token(p) for k, p in name.items() if k not in name_b]
    changed = [f"{_token(name[k])} → {_token(p)}" for k, p in name_b.items() if k in name and name[k] != p]
    parts = []
    if added:
        parts.append(f"{', '.join(added)} added")
    if gone:
        parts.append(f"{', '.join(gone)} removed")
    parts += changed
    if not parts or len(", ".join(parts)) > 160:
        return f"({', '.join(map(_token, a))}) → ({', '.join(map(_token, b))})"
    return "; ".join(parts)


class Shape:
    """What a call's message says: which signatures raise it, which fit the call."""

    def __init__(
        self, raised: Callable[[sh.Signature, int], bool], works: Callable[[sh.Signature, int], bool]
    ):
        self.raised = raised
        self.works = works


def _shape(m: re.Match[str], msg: str) -> tuple[Shape, str, str, str] | None:
    """The message's shape: its tests, the verdict's ``what``, and the words of a change that
    breaks the call and of one that makes it work."""
    func = m.group("func")
    if m.group("kwarg"):
        k = m.group("kwarg")
        if f"'{k}'" not in msg:
            return None  # cut off by the log
        return (
            Shape(lambda s, off: not s.takes_keyword(k), lambda s, off: s.takes_keyword(k)),
            f"{func}() takes {k}=",
            f"{k}= no longer taken",
            f"{k}= taken",
        )
    if m.group("missing"):
        names = _NAMES.findall(m.group("missing"))
        n = int(m.group("n") or 0)
        if not names or (n and len(names) != n):
            return None
        listed = " and ".join(names)
        return (
            Shape(
                lambda s, off: all(s.requires(x) for x in names),
                lambda s, off: not any(s.requires(x) for x in names),
            ),
            f"{func}() requires {listed}",
            f"{listed} became required",
            f"{listed} no longer required",
        )
    if m.group("takes") and m.group("given"):
        most = sh.most_of(m.group("takes"))
        given = int(m.group("given"))
        if most is None or given <= most:
            return None

        def raised(s: sh.Signature, off: int) -> bool:
            top = s.positional()[1]
            return top is not None and top + off == most

        def works(s: sh.Signature, off: int) -> bool:
            req, top = s.positional()
            return (top is None or top + off >= given) and req + off <= given

        return (
            Shape(raised, works),
            f"{func}() takes {given} positional arguments",
            "fewer positional arguments taken",
            f"{given} positional arguments taken",
        )
    return None


def releases(f: sh.Function, shape: Shape) -> tuple[int, int]:
    """The releases of ``f`` whose signature gives the message, and those whose signature fits
    the call: a method's bound first argument (not a static method's) counted among the message's
    positional ones."""

    def bound(s: sh.Signature) -> int:
        return 1 if f.method and not s.static else 0

    return f.where(lambda s: shape.raised(s, bound(s))), f.where(lambda s: shape.works(s, bound(s)))


def _user_defines(tb: Traceback, name: str) -> bool:
    """A frame of the user's code (no package) runs a function of that name: theirs, maybe."""
    return any(f.function == name for t in tb.all() for f in t.frames if f.package is None)


def _called_across(tb: Traceback | None, h: sh.History, name: str) -> bool:
    """A private name kept because other packages call it (``h.callers``) is drift only where a
    frame of one of those packages is in the traceback (or the log shows no frame at all): a
    private function called from the user's code, or from its own package, is not a boundary."""
    callers = h.callers.get(name)
    if callers is None or tb is None:
        return True
    shown = [f.package for t in tb.all() for f in t.frames]
    return not shown or any(p in callers for p in shown)


def candidates(
    cls: str | None, name: str, only: str | None, tb: Traceback | None = None
) -> list[sh.Function]:
    found: list[sh.Function] = []
    for pkg in sh.packages() if only is None else (only,):
        h = sh.history(pkg)
        if h is not None and _called_across(tb, h, name):
            found += h.find(cls, name)
    if cls is None:  # Python names a method with its class: a bare name is a module-level function,
        plain = [f for f in found if not f.method]  # unless the log's Python is older than 3.10
        found = plain or found
    if len({f.package for f in found}) > 1 and tb is not None:
        # several packages define it (transformers' and vllm's ``LlamaModel.forward``): the one
        # whose frames the traceback shows, else none can be told
        shown = {fr.package for t in tb.all() for fr in t.frames}
        found = [f for f in found if f.package in shown]
    return found


@dataclass
class Found:
    """What the signature history says of a call's ``TypeError``: the fields ``symbols.Verdict``
    is built from (symbols imports this module; this one does not import symbols)."""

    package: str
    what: str
    releases: list[str]
    works: int
    scope: int
    changed: str
    raised: int
    below: list[str]


def verdict(tb: Traceback, msg: str, m: re.Match[str], only: str | None) -> Found | None:
    """What the signature history says of a call's ``TypeError`` (``Found``), or None."""
    func = m.group("func")
    owner, _, name = func.rpartition(".")
    cls = owner.rsplit(".", 1)[-1] or None
    if not name or "<" in func or name in _BUILTIN or (cls is None and name.startswith("__")):
        return None
    shape = _shape(m, msg)
    if shape is None or _user_defines(tb, name):
        return None
    test, what, breaks, fixes = shape
    rows = []
    for f in candidates(cls, name, only, tb):
        scope, (raised, works) = f.scope, releases(f, test)
        if raised and works and works != scope:
            rows.append((f, scope, raised, works))
    if not rows or len({r[0].package for r in rows}) != 1 or len({(r[2], r[3]) for r in rows}) != 1:
        return None  # no history, or several functions whose histories do not agree: not one change
    f, scope, raised, works = rows[0]
    return Found(
        f.package,
        what,
        f.releases,
        works,
        scope,
        _change(f, works, scope, breaks, fixes),
        raised,
        _below(f.releases),
    )


def _below(releases: list[str]) -> list[str]:
    """The upper bound that excludes each release and everything of its minor line that came
    before it (``4.52.4`` after ``4.51.3``: ``4.52.0``): a history read from the last patch of
    each minor release does not say at which patch the change came."""
    out = []
    for i, r in enumerate(releases):
        head, prev = r.split(".")[:2], releases[i - 1].split(".")[:2] if i else []
        out.append(f"{head[0]}.{head[1]}.0" if i and len(head) == 2 and head != prev else r)
    return out


def _change(f: sh.Function, works: int, scope: int, breaks: str, fixes: str) -> str:
    """The newest change between a release that fits the call and one that does not, with the
    signature on each side."""
    rel = f.releases
    idx = [i for i in range(len(rel)) if scope >> i & 1]
    for a, b in reversed(list(zip(idx, idx[1:], strict=False))):
        before, after = works >> a & 1, works >> b & 1
        if before == after:
            continue
        old = next((s for s, m in f.signatures if m >> a & 1), None)
        new = next((s for s, m in f.signatures if m >> b & 1), None)
        words = breaks if before else fixes
        where = f.qualified.replace(":", ".")
        diff = f"{_diff(old, new)}; " if old and new else ""
        return f"{words} between {f.package} {rel[a]} and {rel[b]} ({diff}{where})"
    return ""
