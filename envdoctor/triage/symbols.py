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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envdoctor import versions
from envdoctor.knowledge.symbol_history import History, every, history, packages, pinned, pinners
from envdoctor.triage import boundary
from envdoctor.triage.boundary import Boundary
from envdoctor.triage.traceback import PACKAGES, Frame, Traceback

if TYPE_CHECKING:
    from envdoctor.triage.sighistory import Found

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
    #: the history that told it: "symbol" (names), "signature" (a call's parameter lists:
    #: envdoctor/triage/sighistory.py), its words for the change, and the releases whose
    #: signature gives the log's very message (0: not known)
    source: str = "symbol"
    changed: str = ""
    raised: int = 0
    #: the bound an upper pin takes per release index where it is not the release itself (a history
    #: read from the last patch of each minor release: the change came somewhere in that minor)
    below: list[str] | None = None

    @property
    def contradicted(self) -> bool:
        return self.placed == "has"

    @property
    def certain(self) -> bool:
        """The history settles it: not an attribute of another package's base class (one that a
        method sets may not be set yet: evaluate() before train()) unless the log's B lacks it."""
        return self.owner is None or self.placed == "lacks"

    @property
    def older_possible(self) -> str | None:
        """The oldest release read, where the log shows no version of B and the symbol is already
        there in it (it may have come before the history): a B older than that may lack it too,
        so which way the drift goes hinges on the version the log does not show; else None."""
        runs = self._runs()
        if self.placed is not None or self.absent_works or len(runs) != 1:
            return None
        if self.source == "signature" and self._first_scope() > 0:
            return None  # the function came after the oldest release read: nothing older to lack it
        return self.releases[runs[0][0]] if runs[0][0] == self._first_scope() else None

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
            parts.append(f"<{(self.below or self.releases)[b + 1]}")
        elif self.placed == "newer":  # the log's release, past the history, lacks it
            parts.append(f"<={self.releases[-1]}")
        return ",".join(parts)

    def change(self) -> str:
        """``added in vllm 0.12.0`` / ``removed in trl 0.12.0`` (the newest change of B)."""
        if self.changed:
            return self.changed
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

    def said(self) -> str:
        """``vllm.LLM.sleep — added in vllm 0.8.0``: never ``name: value``, which reads as a setting
        (a ``triton_key: …`` would be masked as a secret's value)."""
        return f"{self.what} — {self.change()}"

    def text(self) -> str:
        """The history's fact, for the finding's message."""
        fact = f"{self.said()} (envdoctor's {self.source} history, {self.span()})"
        if not self.certain:
            fact += (
                "; the same message comes from reading it before the method that sets it ran "
                "(evaluate() before train()): the log's versions tell"
            )
        oldest = self.older_possible
        if oldest is not None:
            fact += (
                f"; it is there in the oldest {self.package} release read ({oldest}), so a {self.package} "
                "older than that may lack it too: `pip show " + self.package + "` tells which"
            )
        if self.placed == "lacks":
            lacks = "does not fit the call" if self.source == "signature" else "lacks it"
            fact += f"; the log's {self.package} {self.shown} {lacks}"
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
    """The distribution of ``module``: the frames' table, else a history named like its top-level
    package (``triton``, ``torchao``, ``sglang``: packages of the history the frames do not name)."""
    top = module.split(".")[0]
    known = PACKAGES.get(top)
    if known is not None:
        return known
    dist = top.replace("_", "-")
    return dist if dist in every() else None


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
        v = Verdict(h.package, f"{module}.{first}", h.releases, h.name(module, first), scope)
        v.changed = _moved(h, module, first, v.works)
        return v
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


def _moved(h: History, module: str, name: str, have: int) -> str:
    """``moved to triton.runtime.cache in triton 3.5.0``: the release after the module's last one
    with ``name`` binds it in another module of the package (still importable from there); ""
    where it does not (removed) or the module still has it in the newest release."""
    last = have.bit_length() - 1
    if last < 0 or last >= len(h.releases) - 1:
        return ""
    after = 1 << (last + 1)
    _, where = h.name_anywhere(name)
    there = sorted(m for m in where if m != module and h.name(m, name) & after and h.defines(m, name))
    return f"moved to {there[0]} in {h.package} {h.releases[last + 1]}" if there else ""


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
    obj = m.group("obj")
    cls, attr = obj.rsplit(".", 1)[-1], m.group("attr")
    if "." in obj:  # a compiled class names its package ('torch.dtype'): no other package's class
        owner = _package_of(obj)
        if owner is None or only not in (None, owner):
            return None
        only = owner
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


def _call(msg: str, only: str | None, tb: Traceback | None = None) -> Verdict | None:
    m = boundary._CALL.search(msg)
    if m is None:
        return None
    if tb is not None and (m.group("missing") or m.group("takes")):
        # which parameters are required, how many go by position: the signature history's
        from envdoctor.triage import sighistory

        sig = _signature_verdict(sighistory.verdict(tb, msg, m, only))
        if sig is not None:
            return sig
    if not (m.group("kwarg") or m.group("missing")):
        return None
    names = _names_verdict(m, msg, only)
    if names is None and tb is not None and m.group("kwarg"):
        from envdoctor.triage import sighistory

        # a function the symbol history keeps no parameters of
        return _signature_verdict(sighistory.verdict(tb, msg, m, only))
    return names


def _signature_verdict(found: Found | None) -> Verdict | None:
    """The verdict of what the signature history found (``sighistory.Found``), or None."""
    if found is None:
        return None
    v = Verdict(found.package, found.what, found.releases, found.works, found.scope)
    v.source = "signature"
    v.changed = found.changed
    v.raised = found.raised
    v.below = found.below
    return v


def _names_verdict(m: re.Match[str], msg: str, only: str | None) -> Verdict | None:
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
    if only is not None and only not in every():
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
        v = _call(msg, only, tb)
    v = _drift_shape(v)
    if v is None and tb.name == "TypeError" and only in (None, "transformers"):
        v = _drift_shape(_model_keyword(msg, tb))
    elif v is None and tb.name == "AttributeError" and only in (None, "transformers"):
        v = _drift_shape(_config_attribute(msg))
    return _place(v, have.get(v.package)) if v is not None else None


def _model_keyword(msg: str, tb: Traceback) -> Verdict | None:
    """A keyword a transformers model class's ``forward`` / ``generate`` / ``__init__`` does not take
    (``Qwen2ForCausalLM.forward() got an unexpected keyword argument 'num_logits_to_keep'``): the
    model keyword history (rules/knowledge/signatures/transformers-models.keywords.gz) says in which
    releases that class takes it, by name or through ``**kwargs``; a class the history has no model
    of that name (the user's own) gets no verdict."""
    m = boundary._CALL.search(msg)
    if m is None or not m.group("kwarg") or f"'{m.group('kwarg')}'" not in msg:
        return None
    owner, _, method = m.group("func").rpartition(".")
    cls = owner.rsplit(".", 1)[-1]
    if method not in ("forward", "generate", "__init__") or not cls:
        return None
    from envdoctor.knowledge import model_keywords

    h = model_keywords.history()
    key = "config" if cls.endswith("Config") and method == "__init__" else method
    t = h.takes(cls, key, m.group("kwarg")) if h is not None else None
    if t is None:
        return None
    kwarg = m.group("kwarg")
    works = (t.named | t.var) & t.scope
    v = Verdict("transformers", f"{cls}.{method}() takes {kwarg}=", list(t.releases), works, t.scope)
    v.source = "model keyword"
    v.raised = t.scope & ~works
    v.changed = _model_change(t, kwarg, f"{cls}.{method}")
    return v


def _config_attribute(msg: str) -> Verdict | None:
    """An attribute a transformers configuration class (``Qwen2Config``) has only in some releases
    (its ``__init__``'s parameters, the model keyword history's ``config``): ``'Qwen2Config' object
    has no attribute 'rope_theta'`` read by code written for another release."""
    m = boundary._OBJECT_ATTR.search(msg)
    if m is None or boundary._MODULE_ATTR.search(msg):
        return None
    cls, attr = m.group("obj").rsplit(".", 1)[-1], m.group("attr")
    if not cls.endswith("Config"):
        return None
    from envdoctor.knowledge import model_keywords

    h = model_keywords.history()
    t = h.takes(cls, "config", attr) if h is not None else None
    if t is None:
        return None
    v = Verdict("transformers", f"{cls}.{attr}", list(t.releases), t.named, t.scope)
    v.source = "model keyword"
    v.changed = _model_change(t, attr, f"{cls}(…)", var=False)
    return v


def _model_change(t: object, kwarg: str, where: str, var: bool = True) -> str:
    """``num_logits_to_keep= taken from transformers 4.45 (4.45.2 read; through **kwargs from
    4.46)``: the newest start and end of the releases that take the keyword."""
    from envdoctor.knowledge.model_keywords import Takes

    assert isinstance(t, Takes)
    rel = t.releases
    works = (t.named | (t.var if var else 0)) & t.scope

    def minor(i: int) -> str:
        return ".".join(rel[i].split(".")[:2])

    idx = [i for i in range(len(rel)) if t.scope >> i & 1]
    for a, b in reversed(list(zip(idx, idx[1:], strict=False))):
        before, after = works >> a & 1, works >> b & 1
        if before == after:
            continue
        read = f"({rel[a]} and {rel[b]} read)"
        if not var:  # a configuration's attribute
            verb = "an attribute of" if after else "no longer an attribute of"
            return f"{kwarg} {verb} {where.removesuffix('(…)')} from transformers {minor(b)} {read}"
        how = "by name" if t.named >> (b if after else a) & 1 else "through **kwargs"
        verb = "taken" if after else "no longer taken"
        return f"{kwarg}= {verb} ({how}) by {where} from transformers {minor(b)} {read}"
    return ""


def find(tb: Traceback, have: dict[str, str], context: Sequence[str] = ()) -> tuple[Boundary, Verdict] | None:
    """The boundary of a drift-shaped failure that the tables and frames did not settle, from the
    history: B is the package that has the symbol in some releases only; A the package of the
    frame that called or imported B's, else one that pins B named by the log's lines just before
    the failure (``log_caller``; None: the user's code or a cut-off log)."""
    v = verdict(tb, have)
    if v is None:
        return None
    frames = tb.shown_frames()
    site = tb.frames[tb.call_site] if tb.call_site >= 0 else None
    # the call's site read from its line (the user's code too), else the last package's frame
    caller = site if site is not None and site.package != v.package else _caller(frames, v.package)
    if v.source == "model keyword" and frames and frames[-1].package != v.package:
        # a call's keyword is refused before the callee runs: the innermost frame made the call
        # (the user's ``super().forward(…)``), not a decorator's frame further out
        caller = frames[-1] if frames[-1].package is not None else None
    msg = tb.message
    owner = caller.package if caller else v.owner
    if owner is None and not any(t.frames for t in tb.all()):
        owner = log_caller(context, v.package)
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


# -- a name no release of the class has: the code meant another name or another class ----------


@dataclass
class Unfit:
    """A keyword no release of ``func``'s class takes (``close``: the name it takes that the
    keyword is closest to), or an attribute no release of class ``cls`` has that ``subclasses`` of
    it (another class of ``package``) have from ``since``: what the history says of code that fits
    no release, as it was written."""

    package: str
    releases: list[str]
    cls: str
    name: str
    func: str = ""
    close: str = ""
    since: str = ""
    until: str = ""
    subclasses: tuple[str, ...] = ()


def _span(h: History, have: int) -> tuple[str, str]:
    """The first release of ``have`` and the release after its last (empty: to the newest)."""
    if not have:
        return "", ""
    first = (have & -have).bit_length() - 1
    last = have.bit_length() - 1
    return h.releases[first], h.releases[last + 1] if last + 1 < len(h.releases) else ""


def _init_names(h: History, cls: str, func: str, depth: int = 0) -> set[str]:
    """The parameters ``cls.func`` takes at any release (a dataclass's fields of its bases too)."""
    out: set[str] = set()
    for _, _, node in h.classes(cls):
        params = node.get("p", {}).get(func)
        if isinstance(params, dict):
            out.update(k for k in params if k not in ("@", "**", "self") and not k.startswith("*"))
        if depth < 8:
            for base in node.get("b", {}):
                short = base.rsplit(".", 1)[-1]
                if short != cls and h.class_releases(short):
                    out |= _init_names(h, short, func, depth + 1)
    return out


def unknown_keyword(tb: Traceback) -> Unfit | None:
    """``X.f() got an unexpected keyword argument 'k'`` where the one package whose history has
    class ``X`` never took ``k`` in ``X.f`` (by name or through ``**kwargs``, nor any base class of
    another package's history): the call is wrong for every release read, and the name the class
    takes that is closest to ``k`` (a rename: ``enable_sleep_mode`` → ``vllm_enable_sleep_mode``)."""
    m = boundary._CALL.search(tb.message) if tb.name == "TypeError" else None
    if m is None or not m.group("kwarg") or f"'{m.group('kwarg')}'" not in tb.message:
        return None
    cls, _, func = m.group("func").rpartition(".")
    cls = cls.rsplit(".", 1)[-1]
    kwarg = m.group("kwarg")
    if not cls or cls in _BUILTIN:
        return None
    found = [(h, s) for p in packages() if (h := history(p)) is not None and (s := h.class_releases(cls))]
    if len(found) != 1:
        return None  # a class of no package read (the user's), or a name several packages use
    h, _ = found[0]
    scope, have = h.params(cls, func, kwarg, var=True)
    if not scope or have:
        return None  # no such method read, or some release takes it: the history's verdict
    for _, _, node in h.classes(cls):  # a base class of another package's: its releases decide
        for base in node.get("b", {}):
            short = base.rsplit(".", 1)[-1]
            if h.class_releases(short):
                continue
            for other in packages():
                o = history(other) if other != h.package else None
                if o is not None and o.class_releases(short) and o.params(short, func, kwarg, var=True)[1]:
                    return None
    close, since, until = _close_param(h, cls, func, kwarg)
    return Unfit(h.package, h.releases, cls, kwarg, func, close, since, until)


def _close_param(h: History, cls: str, func: str, kwarg: str) -> tuple[str, str, str]:
    """The parameter of ``cls.func`` closest to ``kwarg`` (one that ends or starts with it, else
    a close spelling) and its releases (first, and the one that removed it); "" where none is."""
    import difflib

    names = _init_names(h, cls, func) - {kwarg}
    near = [n for n in names if n.endswith("_" + kwarg) or n.startswith(kwarg + "_")]
    close = sorted(near, key=len)[:1] or difflib.get_close_matches(kwarg, sorted(names), n=1, cutoff=0.8)
    if not close:
        return "", "", ""
    since, until = _span(h, h.params(cls, func, close[0])[1])
    return close[0], since, until


#: the classes whose constructor takes the run's options as fields or keywords: a configuration
#: (TRL's ``SFTConfig``, peft's ``LoraConfig``, ``BitsAndBytesConfig``), arguments (transformers'
#: ``TrainingArguments``, vLLM's ``EngineArgs``), sampling parameters
CONFIG_CLASS = re.compile(r"(?:Config|Arguments|Args|Params)$")
MAX_OWNERS = 600  # configuration classes of one package asked whether they take a keyword


def as_init(tb: Traceback) -> Traceback:
    """``X() got an unexpected keyword argument 'k'`` for a configuration class ``X`` of the stack
    (``CONFIG_CLASS``, a class of some package's history) as its constructor's message
    (``X.__init__() got …``); any other message as it is."""
    m = boundary._CALL.search(tb.message) if tb.name == "TypeError" else None
    func = m.group("func") if m is not None else ""
    if not func or "." in func or not func[:1].isupper() or not CONFIG_CLASS.search(func):
        return tb
    if not any((h := history(p)) is not None and h.class_releases(func) for p in packages()):
        return tb
    from dataclasses import replace

    assert m is not None
    return replace(
        tb, message=tb.message[: m.start("func")] + f"{func}.__init__" + tb.message[m.end("func") :]
    )


@dataclass(frozen=True)
class Foreign:
    """A keyword no release read of configuration class ``cls`` takes, by name or through
    ``**kwargs`` (``Unfit`` with nothing close): the releases read, whether they are the class's
    whole history (it first appears after the oldest release read), and the other configuration
    classes of the package that take it (whose field the code passed)."""

    unfit: Unfit
    complete: bool
    first: str  # the class's first release read
    owners: tuple[str, ...]
    #: the releases before the symbol history that took the keyword (the config-field index): the
    #: field was removed before the history's first release, ``(first, last, the one after)``
    was: tuple[str, ...] = ()
    older: int = 0  # releases read before the symbol history's (the config-field index)
    #: the bases (of the config-field index's classes) that neither it nor a symbol history reads
    unasked: tuple[str, ...] = ()


def foreign_field(u: Unfit) -> Foreign | None:
    """For ``unknown_keyword``'s verdict on a configuration class's constructor (``CONFIG_CLASS``)
    with no name close to the keyword: what the history says of the class (``Foreign``)."""
    if u.func != "__init__" or u.close or not CONFIG_CLASS.search(u.cls):
        return None
    h = history(u.package)
    if h is None:
        return None
    have = h.class_releases(u.cls)
    if not have:
        return None
    first = (have & -have).bit_length() - 1
    complete, born = first > 0, h.releases[first]
    was: tuple[str, ...] = ()
    older = 0
    unasked: frozenset[str] = frozenset()
    from envdoctor.knowledge.config_fields import config_fields

    old = config_fields(u.package) if first == 0 else None  # the class is older than the history
    if old is not None and old.present(u.cls):
        took, outside = old.takes(u.cls, u.name)
        older = len(old.releases)
        if took:
            lo, hi = old.span(took)
            after = old.releases.index(hi) + 1
            was = (lo, hi, old.releases[after] if after < len(old.releases) else old.until)
        # its birth read, and no base of another package's that the history does not ask
        born = old.born(u.cls) or born
        unasked = outside - _asked_bases(h, u.cls)
        complete = bool(old.born(u.cls)) and not unasked
    owners: list[str] = []
    tried = 0
    for node in h.modules.values():
        for name, spec in node.get("c", {}).items() if isinstance(node, dict) else ():
            if name == u.cls or name in owners or not CONFIG_CLASS.search(name):
                continue
            tried += 1
            if tried > MAX_OWNERS:
                break
            init = spec.get("p", {}).get("__init__") if isinstance(spec, dict) else None
            if isinstance(init, dict) and u.name in init:  # its own field or keyword (bases' not asked)
                owners.append(name)
    return Foreign(u, complete and not was, born, tuple(sorted(owners)), was, older, tuple(sorted(unasked)))


def _asked_bases(h: History, cls: str) -> set[str]:
    """The bases of ``cls`` (in the symbol history) of other packages: ``unknown_keyword`` asked
    their histories whether a release of theirs takes the keyword."""
    return {
        base.rsplit(".", 1)[-1]
        for _, _, node in h.classes(cls)
        for base in node.get("b", {})
        if not h.class_releases(base.rsplit(".", 1)[-1])
    }


@dataclass(frozen=True)
class Added:
    """A keyword configuration class ``cls`` of ``package`` takes from release ``since`` on (every
    release after it, the config-field index's and the symbol history's), where an older release did
    not: the installed release is older than ``since``."""

    package: str
    cls: str
    name: str
    since: str
    before: str  # the last release without it


def added_field(tb: Traceback) -> Added | None:
    """``X.__init__() got an unexpected keyword argument 'k'`` for a configuration class whose every
    release in the symbol history takes ``k`` and whose releases before it (the config-field index,
    rules/knowledge/config_fields/) took it from some release on: peft's ``LoraConfig`` and
    ``use_dora`` (0.9.0). None where any release from that one on does not take it."""
    m = boundary._CALL.search(tb.message) if tb.name == "TypeError" else None
    if m is None or not m.group("kwarg") or f"'{m.group('kwarg')}'" not in tb.message:
        return None
    cls, _, func = m.group("func").rpartition(".")
    cls, kwarg = cls.rsplit(".", 1)[-1], m.group("kwarg")
    if func != "__init__" or not CONFIG_CLASS.search(cls):
        return None
    found = [h for p in packages() if (h := history(p)) is not None and h.class_releases(cls)]
    if len(found) != 1:
        return None
    h = found[0]
    scope, have = h.params(cls, func, kwarg, var=True)
    if not scope or have != scope or not scope & 1:
        return None  # a release of the history does not take it (its verdicts), or the class came later
    from envdoctor.knowledge.config_fields import config_fields

    old = config_fields(h.package)
    if old is None:
        return None
    present = old.present(cls)
    took, _ = old.takes(cls, kwarg)
    if not present or not took:
        return None
    start = (took & -took).bit_length() - 1
    if start == 0 or (present >> start) & ~(took >> start):
        return None  # the oldest release read takes it, or one after it does not
    return Added(h.package, cls, kwarg, old.releases[start], old.releases[start - 1])


def renamed(tb: Traceback) -> tuple[str, str, str] | None:
    """For a keyword a release of the class removed (``X.__init__() got an unexpected keyword
    argument 'k'``), the parameter that took its place: close to it, taken by the newest release,
    and there from the removal or before (``SFTConfig``'s ``max_seq_length`` → ``max_length``);
    ``(the keyword, the name, since)``."""
    m = boundary._CALL.search(tb.message) if tb.name == "TypeError" else None
    if m is None or not m.group("kwarg"):
        return None
    cls, _, func = m.group("func").rpartition(".")
    cls = cls.rsplit(".", 1)[-1]
    kwarg = m.group("kwarg")
    found = [h for p in packages() if (h := history(p)) is not None and cls and h.class_releases(cls)]
    if len(found) != 1:
        return None
    h = found[0]
    have = h.params(cls, func, kwarg)[1]
    if not have or have >> (len(h.releases) - 1) & 1:
        return None  # never taken (``unknown_keyword``), or the newest release still takes it
    removed = have.bit_length()  # the index of the first release after its last
    close, since, until = _close_param(h, cls, func, kwarg)
    if not close or until or not since or h.releases.index(since) > removed:
        return None
    return kwarg, close, since


def _config_classes(cls: str) -> list[str]:
    """The names of the configuration class that goes with class ``cls`` (``DPOTrainer``:
    ``DPOConfig``; ``LlamaModel``: ``LlamaConfig``; ``X``: ``XConfig``)."""
    out = [f"{cls}Config"]
    for suffix in ("Trainer", "Model", "Engine", "Plugin"):
        if cls.endswith(suffix) and len(cls) > len(suffix):
            out.insert(0, f"{cls[: -len(suffix)]}Config")
    return out


def config_field(tb: Traceback) -> tuple[str, str, str, str] | None:
    """For a keyword the newest release of class ``X`` no longer takes (``X.__init__() got an
    unexpected keyword argument 'k'``), the configuration class of ``X`` in the same package
    (``DPOTrainer``: ``DPOConfig``) whose newest release takes it: where the argument went
    (TRL moved its trainers' options into their configs). ``(the keyword, X, the config class,
    the first release of the config's newest run that takes it)``."""
    m = boundary._CALL.search(tb.message) if tb.name == "TypeError" else None
    if m is None or not m.group("kwarg") or f"'{m.group('kwarg')}'" not in tb.message:
        return None
    cls, _, func = m.group("func").rpartition(".")
    cls = cls.rsplit(".", 1)[-1]
    kwarg = m.group("kwarg")
    if func != "__init__" or not cls:
        return None
    found = [h for p in packages() if (h := history(p)) is not None and h.class_releases(cls)]
    if len(found) != 1:
        return None
    h = found[0]
    newest = len(h.releases) - 1
    if h.params(cls, func, kwarg)[1] >> newest & 1:
        return None  # the newest release of X takes it by name: not moved
    for config in _config_classes(cls):
        if config == cls or not h.class_releases(config):
            continue
        have = h.params(config, "__init__", kwarg)[1]
        if not have >> newest & 1:
            continue
        first = newest
        while first > 0 and have >> (first - 1) & 1:
            first -= 1
        return kwarg, cls, config, h.releases[first] if first > 0 else ""
    return None


#: the packages that put their own functions in place of other packages' at run time (a model's
#: forward by liger-kernel and Unsloth, PEFT's layer methods by Unsloth): a call of such a
#: replacement that does not fit it is the patch's drift from the package it patches
PATCHERS = ("liger-kernel", "unsloth", "unsloth-zoo")


@dataclass(frozen=True)
class Patch:
    """A replacement ``func`` of ``package`` that does not take keyword ``name``: the releases read,
    the modules that define it, and the first release from which every definition takes it ("":
    none does yet)."""

    package: str
    releases: list[str]
    func: str
    name: str
    modules: tuple[str, ...]
    since: str


def patched_keyword(tb: Traceback, have: dict[str, str]) -> Patch | None:
    """``f() got an unexpected keyword argument 'k'`` where ``f`` is a plain function of one
    patching package (``PATCHERS``) and some release's ``f`` does not take ``k`` (by name or
    through ``**kwargs``): the package's replacement is older than the caller it stands in for.
    None where every release read takes ``k``, or the log's release of the package does."""
    m = boundary._CALL.search(tb.message) if tb.name == "TypeError" else None
    if m is None or not m.group("kwarg") or "." in m.group("func") or "<" in m.group("func"):
        return None
    func, kwarg = m.group("func"), m.group("kwarg")
    if any(f.function == func for t in tb.all() for f in t.frames if f.package is None):
        return None  # a function of the user's of that name is in the traceback
    found = [
        (h, defs)
        for p in PATCHERS
        if (h := history(p)) is not None and (defs := h.function_defs(func, kwarg))
    ]
    if len(found) != 1:
        return None
    h, defs = found[0]
    bad = 0
    for _, rel, takes in defs:
        bad |= rel & ~takes
    if not bad:
        return None  # every definition of every release read takes it: not this patch's call
    shown = have.get(h.package)
    if shown in h.releases and not bad >> h.releases.index(shown) & 1:
        return None  # the log's release takes it: something else failed
    after = bad.bit_length()  # the first release after the last that rejects it
    since = h.releases[after] if after < len(h.releases) else ""
    modules = tuple(sorted({mod for mod, rel, takes in defs if rel & ~takes}))
    return Patch(h.package, h.releases, func, kwarg, modules, since)


def subclass_attribute(tb: Traceback) -> Unfit | None:
    """``'X' object has no attribute 'y'`` where no release of class ``X`` (one package's) has
    ``y`` and classes derived from ``X`` in one package's history have it (TRL's ``GRPOConfig``
    extends transformers' ``TrainingArguments`` with ``model_init_kwargs``): the code expected
    such a subclass and was given a plain ``X``."""
    m = boundary._OBJECT_ATTR.search(tb.message) if tb.name == "AttributeError" else None
    if m is None or boundary._MODULE_ATTR.search(tb.message) or tb.message.startswith("type object"):
        return None
    cls, attr = m.group("obj").rsplit(".", 1)[-1], m.group("attr")
    if cls in _BUILTIN:
        return None
    owners = [h for p in packages() if (h := history(p)) is not None and h.class_releases(cls)]
    if len(owners) != 1 or owners[0].member(cls, "a", attr)[0] or owners[0].member(cls, "p", attr)[0]:
        return None  # not one package's class, or a release of it has the attribute: the verdict's
    hits: dict[str, list[tuple[str, int]]] = {}
    for p in packages():
        h = history(p)
        if h is None:
            continue
        for node in h.modules.values():
            for sub, spec in (node.get("c", {}) if isinstance(node, dict) else {}).items():
                if sub == cls or not isinstance(spec, dict) or attr not in spec.get("a", {}):
                    continue
                if h.derives(sub, cls):
                    have = h.member(sub, "a", attr)[0]
                    if have:
                        hits.setdefault(h.package, []).append((sub, have))
    if len(hits) != 1:
        return None
    package, subs = next(iter(hits.items()))
    h = history(package)
    if h is None:
        return None
    subs.sort(key=lambda x: (not x[0].startswith("GRPO"), x[0]))  # GRPO's first: envdoctor's stack
    since, until = _span(h, subs[0][1])  # the first one's releases
    names = tuple(dict.fromkeys(s for s, _ in subs))
    return Unfit(package, h.releases, cls, attr, since=since, until=until, subclasses=names)


# -- the release of B that A requires (A's Requires-Dist): the answer where A's version is shown --

#: how many of the log's lines before the failure may name the package that called B
_NEAR = 12


def log_caller(context: Sequence[str], callee: str) -> str | None:
    """The package that imported or called ``callee`` where the traceback shows no frame: one
    whose releases pin ``callee`` (torch pins triton) and whose modules the log's last lines
    before the failure name (``torch._dynamo.exc.BackendCompilerFailed: backend='inductor'
    raised:`` before triton's ImportError), the nearest first."""
    names = {a: _import_name(a) for a in pinners(callee) if a != callee}
    if not names:
        return None
    for line in reversed(context[-_NEAR:]):
        for a, mod in names.items():
            if re.search(rf"(?<![\w.]){re.escape(mod)}\.[A-Za-z_]", line):
                return a
    return None


def _import_name(dist: str) -> str:
    by_dist = {d: m for m, d in PACKAGES.items()}
    return by_dist.get(dist) or dist.replace("-", "_").removesuffix("_python")


def pin_fix(caller: str | None, v: Verdict, have: dict[str, str]) -> tuple[str, str] | None:
    """``(the fix, its source)``: the release of B (``v.package``) that the log's release of A
    (``caller``) requires by its wheel's Requires-Dist, where that release of B has the symbol
    (or is past the history); None where A's version is not shown or A does not pin B."""
    if caller is None or caller not in have:
        return None
    # a CUDA build's local tag (torch 2.5.1+cu124): the same Requires-Dist as the index's wheel;
    # ROCm's and CPU's builds pin other packages (pytorch-triton-rocm, none), so they keep theirs
    spec = pinned(caller, re.sub(r"\+cu\d+$", "", have[caller]), v.package)
    if spec is None:
        return None
    exact = spec[2:] if spec.startswith("==") and "," not in spec and "*" not in spec else None
    if exact is not None and exact in v.releases and not v.works >> v.releases.index(exact) & 1:
        return None  # the release A requires lacks it too: another A than the log's imported it
    target = f"{v.package}=={exact}" if exact else f"{v.package}{spec}"
    fix = (
        f"pip install '{target}' ({caller} {have[caller]} requires {v.package}{spec}: its wheel's "
        f"Requires-Dist)"
    )
    return fix, f"{caller}'s pins of {v.package} (rules/knowledge/symbols/pins.json)"
