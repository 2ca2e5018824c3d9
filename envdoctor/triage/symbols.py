"""API drift told by the symbol history of the stack's packages (rules/knowledge/symbols/).

The history (derived from the release wheels by scripts/derive_symbol_history.py) says, per
package, which releases have each module, top-level name, class attribute and parameter. Triage
reads it only for a drift-shaped failure (an import, an attribute, a call's keyword or positional
arguments): which package defines the symbol the message names, and in which releases. When those
releases start or end inside the history, the message itself shows two releases that do not fit:
the package that lacks it (B), the release where the symbol appeared or vanished, and the range of
B where the failing line works (``Verdict.fits``). A version of B that the log shows and that has the
symbol contradicts drift (``Verdict.contradicted``). A name no package of the history defines (the
user's code), one several packages define without the attribute telling them apart, or a symbol
that every release has, gets no verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envdoctor import versions
from envdoctor.knowledge.symbol_history import History, history, packages
from envdoctor.triage import boundary
from envdoctor.triage.boundary import Boundary
from envdoctor.triage.traceback import PACKAGES, Frame, Traceback

#: the history's packages, import name -> distribution (the files present decide which are read)
_NAMES = re.compile(r"'(\w{1,200})'")
#: exceptions a missing symbol raises; ``Did you mean`` hints are cut off
SHAPES = ("ImportError", "ModuleNotFoundError", "AttributeError", "TypeError")
_NO_NAME = re.compile(r"cannot import name '(?P<name>\w{1,200})'(?! from)")
_BUILTIN = frozenset(
    ("NoneType", "str", "dict", "list", "tuple", "int", "float", "bool", "bytes", "set", "frozenset")
    + ("object", "type", "function", "method", "module", "generator", "coroutine", "property")
)


# -- the verdict --------------------------------------------------------------------------------


@dataclass
class Verdict:
    """What the history says of the symbol that failed: ``package`` (B) has it (``what``) in the
    releases ``works`` (those where the failing line works) out of ``scope`` (those that have the
    thing it belongs to: the module, the class, the function)."""

    package: str
    what: str
    releases: list[str]
    works: int
    scope: int
    #: the version of B the log shows, and where it falls: "has" (the symbol is there: not drift),
    #: "lacks", "newer" (past the history), "older" (before it), None (not shown)
    shown: str | None = None
    placed: str | None = None
    #: the failing line works where the symbol is absent (arguments a newer release requires)
    absent_works: bool = False
    #: the package whose class extends B's class that lacks the attribute (the caller, A)
    owner: str | None = None

    @property
    def contradicted(self) -> bool:
        return self.placed == "has"

    @property
    def certain(self) -> bool:
        """The history settles it: not an attribute of another package's base class (one that a
        method sets may not be set yet: evaluate() before train()) unless the log's B lacks it."""
        return self.owner is None or self.placed == "lacks"

    def _runs(self) -> list[tuple[int, int]]:
        runs, i, n = [], 0, len(self.releases)
        while i < n:
            if self.works >> i & 1:
                j = i
                while j + 1 < n and self.works >> (j + 1) & 1:
                    j += 1
                runs.append((i, j))
                i = j + 1
            else:
                i += 1
        return runs

    def _first_scope(self) -> int:
        return (self.scope & -self.scope).bit_length() - 1

    def fits(self) -> str:
        """The range of B where the failing line works (its newest run): ``>=0.15.0``, ``<0.12.0``,
        ``>=4.46.0,<4.56.0``; "" where every release has it."""
        runs = self._runs()
        if not runs:
            return ""
        a, b = runs[-1]
        parts = []
        if a > self._first_scope():
            parts.append(f">={self.releases[a]}")
        if b < len(self.releases) - 1:
            parts.append(f"<{self.releases[b + 1]}")
        elif self.placed == "newer":  # the log's release, past the history, lacks it
            parts.append(f"<={self.releases[-1]}")
        return ",".join(parts)

    def change(self) -> str:
        """``added in vllm 0.12.0`` / ``removed in trl 0.12.0`` (the newest change of B)."""
        runs = self._runs()
        if not runs:
            return ""
        a, b = runs[-1]
        added = self.absent_works  # the symbol's absence works: the change added it
        gone = b < len(self.releases) - 1 and not self.scope >> (b + 1) & 1
        if gone and a > self._first_scope():  # what it belongs to went with it: its change is its start
            return f"{'removed' if added else 'added'} in {self.package} {self.releases[a]}"
        if b < len(self.releases) - 1:
            return f"{'added' if added else 'removed'} in {self.package} {self.releases[b + 1]}"
        return f"{'removed' if added else 'added'} in {self.package} {self.releases[a]}"

    def span(self) -> str:
        return f"{len(self.releases)} {self.package} releases read"

    def text(self) -> str:
        """The history's fact, for the finding's message."""
        fact = f"{self.what}: {self.change()} (envdoctor's symbol history, {self.span()})"
        if not self.certain:
            fact += (
                "; the same message comes from reading it before the method that sets it ran "
                "(evaluate() before train()): the log's versions tell"
            )
        if self.placed == "lacks":
            fact += f"; the log's {self.package} {self.shown} lacks it"
        elif self.placed == "newer":
            runs = self._runs()
            if runs and runs[-1][1] == len(self.releases) - 1:
                fact += (
                    f"; the log's {self.package} {self.shown} is newer than the history, whose newest "
                    f"release {self.releases[-1]} still has it: it changed after that release, past "
                    "envdoctor's knowledge horizon (rules/knowledge/horizon.yaml)"
                )
            else:
                fact += (
                    f"; the log's {self.package} {self.shown} is newer than the history (envdoctor's "
                    "knowledge horizon, rules/knowledge/horizon.yaml)"
                )
        elif self.placed == "older":
            fact += f"; the log's {self.package} {self.shown} is older than the history"
        return fact


def _place(v: Verdict, version: str | None) -> Verdict:
    if not version:
        return v
    v.shown = version
    key = versions.sort_key(version)
    if key > versions.sort_key(v.releases[-1]):
        v.placed = "newer"
        return v
    if key < versions.sort_key(v.releases[0]):
        v.placed = "older"
        return v
    i = max(j for j, r in enumerate(v.releases) if versions.sort_key(r) <= key)
    v.placed = "has" if v.works >> i & 1 else "lacks"
    return v


def _package_of(module: str) -> str | None:
    return PACKAGES.get(module.split(".")[0])


def _drift_shape(v: Verdict | None) -> Verdict | None:
    """A verdict only where the history shows a change: some releases of the scope work, some do not."""
    if v is None or not v.scope:
        return None
    works = v.works & v.scope
    if not works or works == v.scope:
        return None
    v.works = works
    return v


def _import(msg: str, only: str | None, shown: dict[str, str]) -> Verdict | None:
    m = boundary._IMPORT.search(msg) or boundary._MODULE_ATTR.search(msg)
    if m is not None:
        module = m.group("module")
        pkg = _package_of(module)
        h = history(pkg) if pkg and (only in (None, pkg)) else None
        name = m.groupdict().get("name") or m.groupdict().get("attr") or ""
        if h is None or not name:
            return None
        scope = h.module(module)
        first = name.split(".")[0]
        return Verdict(h.package, f"{module}.{first}", h.releases, h.name(module, first), scope)
    m = boundary._NO_MODULE.search(msg)
    if m is not None:
        module = m.group("module")
        pkg = _package_of(module)
        h = history(pkg) if pkg and "." in module and only in (None, pkg) else None
        if h is None:
            return None
        return Verdict(h.package, f"the module {module}", h.releases, h.module(module), h.full)
    m = _NO_NAME.search(msg)
    if m is None:
        return None
    return _distinctive_name(m.group("name"), only, shown)


def _changes(h: History, have: int, scope: int, shown: str | None) -> bool:
    """Some releases of ``scope`` lack the symbol (or the log's version of the package is older
    than its history): that package can be the one the failure names."""
    works = have & scope
    older = shown is not None and versions.sort_key(shown) < versions.sort_key(h.releases[0])
    return bool(works) and (works != scope or older)


def _distinctive_name(name: str, only: str | None, shown: dict[str, str]) -> Verdict | None:
    """A name imported with its module cut off: the one package of the history that binds it;
    where several do, the one whose releases lack it in some (the others' have it in every
    release read: the failure is not theirs)."""
    found = []
    for pkg in packages() if only is None else (only,):
        h = history(pkg)
        if h is None:
            continue
        have, where = h.name_anywhere(name)
        if have:
            found.append((h, have, where))
    if len(found) > 1:
        found = [f for f in found if _changes(f[0], f[1], f[0].full, shown.get(f[0].package))]
    if len(found) != 1:
        return None  # no package binds it (the user's code), or several could: not distinctive
    h, have, where = found[0]
    where = sorted(where, key=lambda m: (not h.defines(m, name), m.count("."), m))
    return Verdict(h.package, f"{name} ({h.package}'s {where[0]})", h.releases, have, h.full)


def _object(msg: str, only: str | None, shown: dict[str, str]) -> Verdict | None:
    m = boundary._OBJECT_ATTR.search(msg)
    if m is None or boundary._MODULE_ATTR.search(msg):
        return None
    cls, attr = m.group("obj").rsplit(".", 1)[-1], m.group("attr")
    if cls in _BUILTIN or boundary.OBJECTS.get(cls) not in (None, *packages()):
        return None  # a builtin, or a class of a package without a history (torch's Tensor)
    found: list[Verdict] = []
    for pkg in packages() if only is None else (only,):
        h = history(pkg)
        scope = h.class_releases(cls) if h is not None else 0
        if h is None or not scope:
            continue
        have, foreign = h.member(cls, "a", attr)
        inherited = [v for v in (_foreign(base, attr, pkg, shown) for base in set(foreign)) if v is not None]
        if inherited and have:
            return None  # its own class and another package's base class set it: both releases decide
        if inherited:
            if len(inherited) == 1 and only is None:  # the base class's package lacks it (B)
                inherited[0].what = f"{inherited[0].what} ({cls} of {h.package} extends it)"
                inherited[0].owner = h.package
                found.append(inherited[0])
            continue
        found.append(Verdict(h.package, f"{cls}.{attr}", h.releases, have, scope))
    if len(found) > 1:  # a class name several packages define: the attribute must decide
        found = [
            v for v in found if _changes(history(v.package) or _EMPTY, v.works, v.scope, shown.get(v.package))
        ]
    return found[0] if len(found) == 1 else None


_EMPTY = History("", [""], {})


def _foreign(base: str, attr: str, own: str, shown: dict[str, str]) -> Verdict | None:
    """Another package's base class ``base`` with ``attr`` in some of its releases: its verdict."""
    for pkg in packages():
        h = history(pkg) if pkg != own else None
        scope = h.class_releases(base) if h is not None else 0
        if h is None or not scope:
            continue
        have = h.member(base, "a", attr)[0]
        if have:
            return Verdict(h.package, f"{base}.{attr}", h.releases, have, scope)
    return None


def _call(msg: str, only: str | None) -> Verdict | None:
    m = boundary._CALL.search(msg)
    if m is None or not (m.group("kwarg") or m.group("missing")):
        return None
    func = m.group("func")
    cls, _, name = func.rpartition(".")
    cls = cls.rsplit(".", 1)[-1] or None
    if cls is None and (name.startswith("__") or name in _BUILTIN):
        return None  # ``__init__() got …`` (Python < 3.10): which class is not said
    kwarg = m.group("kwarg")
    wanted = [kwarg] if kwarg else _NAMES.findall(m.group("missing") or "")
    if not wanted or (kwarg and f"'{kwarg}'" not in msg):
        return None  # the keyword cut off by the log
    found = []
    for pkg in packages() if only is None else (only,):
        h = history(pkg)
        if h is None:
            continue
        scope, have = 0, -1
        for p in wanted:
            s, got = h.params(cls, name, p)
            if kwarg and not got:  # taken only through **kwargs, where at all
                got = h.params(cls, name, p, var=True)[1]
            scope |= s
            have = got if have == -1 else have & got
        if scope:
            found.append((h, scope, max(have, 0)))
    if len(found) > 1:
        found = [f for f in found if f[2]]
    if len(found) != 1:
        return None
    h, scope, have = found[0]
    if kwarg:
        return Verdict(h.package, f"{func}() takes {kwarg}=", h.releases, have, scope)
    listed = " and ".join(wanted)
    needs = f"{func}() requires {listed}"
    return Verdict(h.package, needs, h.releases, scope & ~have, scope, absent_works=True)


def verdict(tb: Traceback, have: dict[str, str], only: str | None = None) -> Verdict | None:
    """What the history says of ``tb``'s failure (module docstring); ``only``: the package the
    tables or frames named (B), else the history finds it; ``have``: the log's versions."""
    if tb.name not in SHAPES or not packages():
        return None
    if only is not None and only not in packages():
        return None
    msg = tb.message
    if "(unknown location)" in msg or "partially initialized module" in msg:
        return None  # a folder shadowing the package, a circular import: not a release's API
    if tb.name in ("ImportError", "ModuleNotFoundError") or boundary._MODULE_ATTR.search(msg):
        v = _import(msg, only, have)
    elif tb.name == "AttributeError":
        v = _object(msg, None, have)  # a subclass's attribute may be its base class's package's
        if v is not None and only is not None and v.package != only:
            v = None
        if v is None and only is not None:
            v = _object(msg, only, have)
    else:
        v = _call(msg, only)
    v = _drift_shape(v)
    return _place(v, have.get(v.package)) if v is not None else None


def find(tb: Traceback, have: dict[str, str]) -> tuple[Boundary, Verdict] | None:
    """The boundary of a drift-shaped failure that the tables and frames did not settle, from the
    history: B is the package that has the symbol in some releases only; A the package of the
    frame that called or imported B's (None: the user's code or a cut-off log)."""
    v = verdict(tb, have)
    if v is None:
        return None
    frames = [f for t in tb.all() for f in t.frames] if not tb.frames else tb.frames
    caller = _caller(frames, v.package)
    msg = tb.message
    owner = caller.package if caller else v.owner
    kind = tb.name
    if kind in ("ImportError", "ModuleNotFoundError"):
        m = boundary._IMPORT.search(msg) or _NO_NAME.search(msg)
        name = m.group("name") if m else v.what
        verb = f"imports {name}" if m else f"imports {v.what}"
        lacks = "does not have"
        func = ""
    elif kind == "AttributeError":
        func, _, name = v.what.split(" (")[0].rpartition(".")
        verb, lacks = f"reads {v.what}", "does not have"
    else:
        func = v.what.split("(")[0].removesuffix(".__init__")
        name = v.what
        verb, lacks = f"calls {func}()", "does not fit"
    b = Boundary(
        owner,
        v.package,
        tb,
        v.what,
        caller,
        None,
        verb=verb,
        lacks=lacks,
        name=name,
        func=func,
    )
    return b, v


def _caller(frames: list[Frame], callee: str) -> Frame | None:
    return next(
        (f for f in reversed(frames) if f.package not in (callee, None)),
        None,
    )
