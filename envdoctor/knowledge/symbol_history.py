"""The symbol history of the stack's packages (rules/knowledge/symbols/, derived from their
release wheels by scripts/derive_symbol_history.py): per package, which releases have each
module, top-level name, class attribute and parameter. Read lazily, one package's file at a time,
by triage (a drift-shaped failure) and by the check of a training script's calls into TRL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from envdoctor.knowledge.gzip_json import mask

SCHEMA = "envdoctor.symbols/1"
MAX_BYTES = 4 * 1024 * 1024  # a history file larger than this is passed over


def _mask(spec: Any, parent: int) -> int:
    """The releases of a symbol: ``0`` (its parent's), ``"3-9,12"`` (indices)."""
    return parent if spec == 0 or spec is None else mask(spec)


def _own(node: Any, parent: int) -> int:
    return _mask(node.get("@") if isinstance(node, dict) else node, parent)


@dataclass
class History:
    """One package's history: its releases and symbols (the derive script's layout)."""

    package: str
    releases: list[str]
    modules: dict[str, Any]

    @property
    def full(self) -> int:
        return (1 << len(self.releases)) - 1

    def module(self, name: str) -> int:
        node = self.modules.get(name)
        return 0 if node is None else _own(node, self.full)

    def submodules(self, name: str) -> dict[str, int]:
        prefix = name + "."
        return {m[len(prefix) :]: self.module(m) for m in self.modules if m.startswith(prefix)}

    def name(self, module: str, name: str) -> int:
        """Releases where ``module`` binds ``name`` (or has it as a submodule)."""
        node = self.modules.get(module)
        if node is None:
            return 0
        mod = _own(node, self.full)
        names = node.get("n", {}) if isinstance(node, dict) else {}
        have = _mask(names[name], mod) if name in names else 0
        return have | self.module(f"{module}.{name}")

    def defines(self, module: str, name: str) -> bool:
        """``module`` defines ``name`` as a class or function of its own (not a re-export)."""
        node = self.modules.get(module)
        return isinstance(node, dict) and (name in node.get("c", {}) or name in node.get("f", {}))

    def name_anywhere(self, name: str) -> tuple[int, list[str]]:
        """Releases where any module binds ``name`` (defines or re-exports it), and those modules."""
        have, where = 0, []
        for module, node in self.modules.items():
            names = node.get("n") if isinstance(node, dict) else None
            if names and name in names:
                have |= _mask(names[name], _own(node, self.full))
                where.append(module)
        return have, where

    def classes(self, cls: str) -> Iterator[tuple[str, int, dict[str, Any]]]:
        """``(module, releases, node)`` of every class named ``cls``."""
        for module, node in self.modules.items():
            found = node.get("c", {}).get(cls) if isinstance(node, dict) else None
            if found is not None:
                yield module, _own(found, _own(node, self.full)), found if isinstance(found, dict) else {}

    def class_releases(self, cls: str) -> int:
        out = 0
        for _, rel, _ in self.classes(cls):
            out |= rel
        return out

    def derives(self, cls: str, base: str, depth: int = 0) -> int:
        """Releases where class ``cls`` is ``base`` or derives from a class of that name (by its
        short name; an import alias's leading underscores dropped: ``_GRPOTrainer``)."""
        if cls.lstrip("_") == base:
            return self.class_releases(cls) or self.full
        have = 0
        for _, rel, node in self.classes(cls):
            for parent, spec in node.get("b", {}).items():
                short = parent.rsplit(".", 1)[-1]
                if short.lstrip("_") == base:
                    have |= _mask(spec, rel)
                elif short != cls and depth < 8:
                    have |= _mask(spec, rel) & self.derives(short, base, depth + 1)
        return have

    def member(self, cls: str, key: str, member: str, depth: int = 0) -> tuple[int, list[str]]:
        """Releases where class ``cls`` (its own body, or a base class of this package) has
        ``member`` in ``key`` (``a``: attributes, ``p``: methods with parameters); and the base
        classes named that this package does not define (another package's, followed by the caller)."""
        have, foreign = 0, []
        for _, rel, node in self.classes(cls):
            members = node.get(key, {})
            if member in members:
                have |= _mask(members[member], rel)
            if depth < 8:
                for base, spec in node.get("b", {}).items():
                    short = base.rsplit(".", 1)[-1]
                    if short == cls:
                        continue
                    within = _mask(spec, rel)
                    if self.class_releases(short):
                        have |= within & self.member(short, key, member, depth + 1)[0]
                        foreign += self.member(short, key, member, depth + 1)[1]
                    else:
                        foreign.append(short)
        return have, foreign

    def params(
        self, cls: str | None, func: str, param: str, var: bool = False, depth: int = 0
    ) -> tuple[int, int]:
        """``(releases with the function, releases where it takes ``param``: by name, or with
        ``var`` through **kwargs too)``; a dataclass's ``__init__`` takes its bases' fields too."""
        scope = have = 0
        nodes: list[tuple[int, dict[str, Any]]] = []
        if cls is None:
            for node in self.modules.values():
                f = node.get("f", {}).get(func) if isinstance(node, dict) else None
                if f is not None:
                    nodes.append((_own(f, _own(node, self.full)), f if isinstance(f, dict) else {}))
        else:
            for _, rel, node in self.classes(cls):
                m = node.get("p", {}).get(func)
                if m is not None:
                    nodes.append((_own(m, rel), m if isinstance(m, dict) else {}))
                if func == "__init__" and "d" in node and depth < 8:  # fields of the bases too
                    fields = _mask(node["d"], rel)
                    for base, spec in node.get("b", {}).items():
                        short = base.rsplit(".", 1)[-1]
                        if short != cls and self.class_releases(short):
                            inherited = self.params(short, func, param, var, depth + 1)[1]
                            have |= fields & _mask(spec, rel) & inherited
        for rel, node in nodes:
            scope |= rel
            for key in (param, "**") if var else (param,):
                if key in node:
                    have |= _mask(node[key], rel)
        return scope, have

    def function_defs(self, func: str, param: str) -> list[tuple[str, int, int]]:
        """``(module, releases with the module-level function, releases where it takes ``param``
        by name or through **kwargs)`` for each module that defines ``func``."""
        out = []
        for module, node in self.modules.items():
            f = node.get("f", {}).get(func) if isinstance(node, dict) else None
            if f is None:
                continue
            rel = _own(f, _own(node, self.full))
            spec = f if isinstance(f, dict) else {}
            have = 0
            for key in (param, "**"):
                if key in spec:
                    have |= _mask(spec[key], rel)
            out.append((module, rel, have))
        return out


def _dir() -> Any:
    from envdoctor.resources import rules_dir

    return rules_dir() / "knowledge" / "symbols"


@lru_cache(maxsize=64)  # a message may read every package: all of them stay
def history(package: str) -> History | None:
    """The history of ``package`` (a distribution name), or None where envdoctor has none (or its
    file is not one: too large, not gzip'd JSON of this schema)."""
    from envdoctor.knowledge.gzip_json import load

    doc = load(_dir() / f"{package}.json.gz", SCHEMA, MAX_BYTES)
    if doc is None:
        return None
    symbols = doc.get("symbols")
    releases = doc.get("releases")
    if not isinstance(symbols, dict) or not isinstance(releases, list) or not releases:
        return None
    return History(str(doc.get("package") or package), [str(r) for r in releases], symbols.get("m") or {})


#: histories read only for the signatures of a package's run-time replacements (triage's
#: ``symbols.patched_keyword``), never to tell which package owns a name: Unsloth binds TRL's and
#: transformers' names in its own modules (``selective_log_softmax``), which would leave no name of
#: theirs one package's
PATCH_ONLY = frozenset({"unsloth"})
#: frameworks over the stack that subclass its classes under the same names (ms-swift's
#: ``DPOTrainer`` extends TRL's, verl's and SGLang's engines wrap vLLM's and transformers'): their
#: histories answer where the message's module or a frame names them, never to tell which package
#: owns a bare name (TRL's ``DPOTrainer.__init__() got an unexpected keyword argument`` is TRL's)
FRAMEWORKS = frozenset({"ms-swift", "verl", "sglang"})


@lru_cache(maxsize=1)
def packages() -> tuple[str, ...]:
    """The packages envdoctor has a history of, for telling which package has a name."""
    return tuple(p for p in every() if p not in PATCH_ONLY | FRAMEWORKS)


def every() -> tuple[str, ...]:
    """Every package envdoctor has a history of (a frame or the message's module names it): the
    folder's listing, read where a drift-shaped failure asks (not cached: ``packages`` is)."""
    from envdoctor.knowledge.gzip_json import names

    return names(_dir())


#: classes whose method signatures ``check`` reads (CFG008), kept as a small table beside the
#: package's history so the static check does not parse the whole history
CALL_TABLES = {"trl": ("GRPOTrainer",)}


def call_table(h: History, cls: str) -> dict[str, Any]:
    """The signatures of ``cls``'s methods in every release of ``h``: ``{"releases": [...],
    "methods": {method: {"@": releases with it, param: releases taking it by name, "**": releases
    taking **kwargs}}}``, releases as bit masks over ``releases`` (what ``History.params`` says)."""
    methods: dict[str, dict[str, int]] = {}
    for _, _, node in h.classes(cls):
        for method, spec in (node.get("p") or {}).items():
            names = [k for k in (spec if isinstance(spec, dict) else {}) if k != "@"]
            row = methods.setdefault(method, {})
            for name in [*names, "**"]:
                scope, have = h.params(cls, method, name)
                row["@"] = row.get("@", 0) | scope
                if have:
                    row[name] = row.get(name, 0) | have
    return {"schema": SCHEMA, "package": h.package, "class": cls, "releases": h.releases, "methods": methods}


@lru_cache(maxsize=8)
def calls(package: str, cls: str) -> dict[str, Any] | None:
    """The call table of ``package``'s ``cls`` (``symbols/PACKAGE.CLS.json``), or None."""
    path = _dir() / f"{package}.{cls}.json"
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and doc.get("schema") == SCHEMA and isinstance(doc.get("methods"), dict)
    return doc if ok and isinstance(doc.get("releases"), list) else None


def defines_method(package: str, method: str, cls: str | None = None) -> bool:
    """``package``'s history has a class (``cls``, else any) with a method ``method``."""
    h = history(package) if package in packages() else None
    if h is None:
        return False
    if cls is not None:
        return any(method in node.get("p", {}) for _, _, node in h.classes(cls))
    return any(
        isinstance(spec, dict) and method in spec.get("p", {})
        for node in h.modules.values()
        if isinstance(node, dict)
        for spec in node.get("c", {}).values()
    )


def param_since(package: str, method: str, param: str) -> str | None:
    """The first release in which a class of ``package`` has ``method`` taking ``param`` (where
    the package's own method takes it, its callers pass it), if the history says so and some
    earlier release of the method lacked it."""
    h = history(package) if package in packages() else None
    if h is None:
        return None
    have = scope = 0
    for node in h.modules.values():
        for name, spec in (node.get("c", {}) if isinstance(node, dict) else {}).items():
            if isinstance(spec, dict) and method in spec.get("p", {}):
                s, got = h.params(name, method, param)
                scope |= s
                have |= got
    if not have or (have & -have) == (scope & -scope):
        return None  # no release takes it, or the first with the method already did
    return h.releases[(have & -have).bit_length() - 1]


def param_added(package: str, method: str, param: str) -> str | None:
    """The release from which ``package`` passes ``param`` to ``method`` on every class of its own
    that took it later than it had the method (``vllm``'s ``collective_rpc`` gained ``non_block``
    on ``MultiprocExecutor`` in 0.9.0 and on ``UniProcExecutor`` in 0.11.0, where the abstract
    ``Executor`` came with it: 0.11.0). A class born with the parameter says nothing of when the
    package's callers started passing it. None where no class of the history added it."""
    h = history(package) if package in packages() else None
    if h is None:
        return None
    best = -1
    for node in h.modules.values():
        for name, spec in (node.get("c", {}) if isinstance(node, dict) else {}).items():
            if not isinstance(spec, dict) or method not in spec.get("p", {}):
                continue
            scope, have = h.params(name, method, param)
            if have and (have & -have) != (scope & -scope):
                best = max(best, (have & -have).bit_length() - 1)
    return h.releases[best] if best >= 0 else None


PINS_SCHEMA = "envdoctor.pins/1"


def pins() -> dict[str, dict[str, dict[str, str]]]:
    """The exact or bounded requirements that releases of one package place on another (its
    wheel's Requires-Dist, ``symbols/pins.json``, derived by scripts/derive_symbol_history.py
    --pins): ``{A: {release: {B: specifier}}}``; empty where the file is absent or not one."""
    return _pins_at(str(_dir() / "pins.json"))


@lru_cache(maxsize=4)
def _pins_at(where: str) -> dict[str, dict[str, dict[str, str]]]:
    path = Path(where)
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return {}
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != PINS_SCHEMA or not isinstance(doc.get("pins"), dict):
        return {}
    return {
        str(a): {str(v): dict(req) for v, req in rows.items() if isinstance(req, dict)}
        for a, rows in doc["pins"].items()
        if isinstance(rows, dict)
    }


def pinned(a: str, version: str, b: str) -> str | None:
    """The specifier release ``version`` of ``a`` requires of ``b`` (``==3.1.0``), if it pins it."""
    return (pins().get(a, {}).get(version) or {}).get(b)


def pinners(b: str) -> tuple[str, ...]:
    """The packages some release of which pins ``b``."""
    return tuple(a for a, rows in pins().items() if any(b in req for req in rows.values()))
