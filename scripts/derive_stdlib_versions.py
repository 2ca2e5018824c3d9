#!/usr/bin/env python3
"""Derive the first Python version that has each standard-library module, name and keyword.

A maintainer command.

Triage (envdoctor/triage/pyboundary.py, TRI029) reads a package's code using a standard-library
name the run's Python lacks: ``cannot import name 'Unpack' from 'typing'`` on Python 3.9, ``No module
named 'tomllib'``, ``module 'functools' has no attribute 'cache'``, ``dataclass() got an unexpected
keyword argument 'slots'``. The data comes from python/typeshed's stubs of the standard library:

- ``stdlib/VERSIONS``: each module's first (and last) Python version;
- each ``stdlib/**/*.pyi``: the names a module binds (``def``, ``class``, assignments, re-exports)
  under ``if sys.version_info >= (3, N):`` guards (a ``<`` guard's ``else`` branch likewise), and
  the parameters of its functions and of its classes' ``__init__`` / ``__new__`` by the same
  guards; the members of ``builtins``' classes (``str.removeprefix``). A name only a
  ``sys.platform`` guard binds is left out (``os.pidfd_open``: Linux's, not a Python version's).

typeshed drops the guards of the Pythons it stops supporting, so one commit does not tell every
version: give an old commit (its guards from 3.8 on) and a new one (the latest modules); a name's
version is the latest any source gives it (an unguarded name in the newer source only says "at or
before that source's oldest Python"). Nothing is imported: ``ast`` and ``git`` only.

Only what arrived in Python ``FLOOR`` (3.8) or later is kept: every Python a training stack runs on
has the rest. It writes ``rules/knowledge/stdlib_versions.json`` (schema
``envdoctor.stdlib_versions/1``)::

    {"schema": …, "sources": [{"repository": …, "commit": …}],
     "modules": {"tomllib": "3.11", …}, "removed": {"distutils": "3.12", …},
     "names": {"typing": {"Unpack": "3.11", …}},
     "parameters": {"dataclasses.dataclass": {"slots": "3.10", …}, "builtins.zip": {"strict": "3.10"}},
     "members": {"str": {"removeprefix": "3.9"}, …}}

Usage::

    python scripts/derive_stdlib_versions.py --git /path/to/typeshed/.git f6279c71… 21dff5c0… [-o OUT]
    python scripts/derive_stdlib_versions.py --dir tests/fixtures/typeshed_stdlib [-o OUT]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path

SCHEMA = "envdoctor.stdlib_versions/1"
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "stdlib_versions.json"
REPOSITORY = "https://github.com/python/typeshed"
FLOOR = (3, 8)
BASE = (3, 0)

Version = tuple[int, int]
Table = dict[str, dict[str, Version]]


def _parse_range(text: str) -> tuple[Version, Version | None]:
    first, _, last = text.strip().partition("-")

    def v(s: str) -> Version:
        major, minor = s.strip().split(".")[:2]
        return int(major), int(minor)

    return v(first), (v(last) if last.strip() else None)


def versions_file(text: str) -> dict[str, tuple[Version, Version | None]]:
    """``stdlib/VERSIONS``: module → (first, last or None)."""
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or ":" not in line:
            continue
        name, rng = line.split(":", 1)
        out[name.strip()] = _parse_range(rng)
    return out


def _version_test(test: ast.expr) -> tuple[str, Version] | None:
    """``(">=", (3, 10))`` for ``sys.version_info >= (3, 10)`` (also inside an ``and``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            found = _version_test(value)
            if found is not None and found[0] == ">=":
                return found
        return None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and len(test.comparators) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if not (isinstance(left, ast.Attribute) and left.attr == "version_info"):
        return None
    if not (isinstance(right, ast.Tuple) and len(right.elts) >= 2):
        return None
    nums = [e.value for e in right.elts[:2] if isinstance(e, ast.Constant) and isinstance(e.value, int)]
    if len(nums) != 2:
        return None
    version = (nums[0], nums[1])
    if isinstance(op, ast.GtE):
        return ">=", version
    if isinstance(op, ast.Lt):
        return "<", version
    return None


def _platform_test(test: ast.expr) -> bool:
    """``sys.platform == "linux"`` (also inside ``and`` / ``or`` / ``not``)."""
    return any(isinstance(n, ast.Attribute) and n.attr == "platform" for n in ast.walk(test))


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x.arg not in ("self", "cls")]


def _keep(table: Table, key: str, name: str, version: Version) -> None:
    have = table.setdefault(key, {}).get(name)
    if have is None or version < have:
        table[key][name] = version


class _Module:
    """The names, parameters and class members one stub binds, each at its earliest guard."""

    def __init__(self, module: str, start: Version) -> None:
        self.module, self.start = module, start
        self.names: dict[str, Version] = {}
        self.params: Table = {}
        self.members: Table = {}
        self.platform = False  # inside a ``sys.platform`` guard
        self.platform_names: dict[str, Version] = {}

    def public(self) -> dict[str, Version]:
        """The names bound on every platform, each at its earliest version (a platform's own
        binding of a name lowers it; a name only some platforms bind is left out)."""
        return {n: min(v, self.platform_names.get(n, v)) for n, v in self.names.items()}

    def body(self, stmts: list[ast.stmt], at: Version, cls: str | None = None) -> None:
        for s in stmts:
            if isinstance(s, ast.If):
                test = _version_test(s.test)
                if test is None:
                    plat = self.platform
                    self.platform = plat or _platform_test(s.test)
                    self.body(s.body, at, cls)
                    self.body(s.orelse, at, cls)
                    self.platform = plat
                elif test[0] == ">=":
                    self.body(s.body, max(at, test[1]), cls)
                    self.body(s.orelse, at, cls)
                else:  # ``< (3, N)``: the body is the older Pythons', the else branch from 3.N on
                    self.body(s.body, at, cls)
                    self.body(s.orelse, max(at, test[1]), cls)
                continue
            for name in _bound(s):
                if _private(name):
                    continue
                if cls is None and self.platform:  # one platform's (os.pidfd_open: Linux's)
                    self.platform_names[name] = min(self.platform_names.get(name, at), at)
                elif cls is None:
                    self.names[name] = min(self.names.get(name, at), at)
                else:
                    _keep(self.members, cls, name, at)
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef):
                if cls is None:
                    for p in _params(s):
                        _keep(self.params, f"{self.module}.{s.name}", p, at)
                elif s.name in ("__init__", "__new__"):
                    for p in _params(s):
                        _keep(self.params, f"{self.module}.{cls}", p, at)
            elif isinstance(s, ast.ClassDef) and cls is None:
                self.body(s.body, at, s.name)


def _bound(s: ast.stmt) -> Iterator[str]:
    if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield s.name
    elif isinstance(s, ast.Assign):
        for t in s.targets:
            if isinstance(t, ast.Name):
                yield t.id
    elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
        yield s.target.id
    elif isinstance(s, ast.ImportFrom):
        for alias in s.names:
            if alias.asname and alias.asname == alias.name:  # a stub's explicit re-export
                yield alias.name
    elif sys.version_info >= (3, 12) and isinstance(s, ast.TypeAlias) and isinstance(s.name, ast.Name):
        yield s.name.id


def _private(dotted: str) -> bool:
    """A private module or name (``_ast``, ``typing._SpecialForm``): no package's code imports it by
    name from the standard library, and it would only grow the data."""
    return any(part.startswith(("_", "@")) and not part.startswith("__") for part in dotted.split("."))


def _module_name(path: str) -> str:
    parts = path[: -len(".pyi")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


class Source:
    """One typeshed ``stdlib`` folder: a directory, or a git directory at a commit."""

    def __init__(self, directory: Path | None = None, git_dir: Path | None = None, commit: str = "") -> None:
        self.directory, self.git_dir, self.commit = directory, git_dir, commit

    def read(self, rel: str) -> str:
        if self.directory is not None:
            return (self.directory / rel).read_text(encoding="utf-8", errors="replace")
        from gitread import git  # scripts/gitread.py

        assert self.git_dir is not None
        return git(self.git_dir, "show", f"{self.commit}:stdlib/{rel}")

    def stubs(self) -> list[str]:
        if self.directory is not None:
            return sorted(p.relative_to(self.directory).as_posix() for p in self.directory.rglob("*.pyi"))
        from gitread import git

        assert self.git_dir is not None
        out = git(self.git_dir, "ls-tree", "-r", "--name-only", self.commit, "stdlib/")
        return sorted(x[len("stdlib/") :] for x in out.splitlines() if x.endswith(".pyi"))


def read_source(src: Source) -> dict[str, object]:
    """One source's modules (first, last), names, parameters and builtins' members."""
    ranges = versions_file(src.read("VERSIONS"))
    names: Table = {}
    params: Table = {}
    members: Table = {}
    for rel in src.stubs():
        module = _module_name(rel)
        if _private(module):
            continue
        top = module.split(".")[0]
        known = ranges.get(module) or ranges.get(top)
        if known is None:
            continue
        start = known[0]
        try:
            tree = ast.parse(src.read(rel))
        except SyntaxError:
            continue
        m = _Module(module, start)
        m.body(tree.body, start)
        names[module] = {n: max(v, start) for n, v in m.public().items()}
        for key, ps in m.params.items():
            params[key] = {p: max(v, start) for p, v in ps.items()}
        if module == "builtins":
            members.update(m.members)
    return {"ranges": ranges, "names": names, "params": params, "members": members}


def _fmt(v: Version) -> str:
    return f"{v[0]}.{v[1]}"


def merge(sources: list[dict[str, object]]) -> dict[str, object]:
    """The latest version any source gives each module, name, parameter and member (see the module
    docstring), kept from ``FLOOR`` on; parameters and members only where later than their function
    or class."""
    modules: dict[str, Version] = {}
    removed: dict[str, Version] = {}
    for s in sources:
        for mod, (first, last) in s["ranges"].items():  # type: ignore[attr-defined]
            modules[mod] = max(modules.get(mod, first), first)
            if last is not None:
                removed[mod] = (last[0], last[1] + 1)

    def tables(key: str) -> Table:
        out: Table = {}
        for s in sources:
            for owner, entries in s[key].items():  # type: ignore[attr-defined]
                for name, v in entries.items():
                    have = out.setdefault(owner, {}).get(name)
                    out[owner][name] = v if have is None else max(have, v)
        return out

    names, params, members = tables("names"), tables("params"), tables("members")

    def since_floor(table: Table, owner_first: dict[str, Version]) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for owner in sorted(table):
            floor = max(FLOOR, owner_first.get(owner, BASE))
            kept = {n: _fmt(v) for n, v in sorted(table[owner].items()) if v >= FLOOR and v > floor}
            if kept:
                out[owner] = dict(sorted(kept.items()))
        return out

    def first_of(owner: str) -> Version:
        mod, _, name = owner.rpartition(".")
        return names.get(mod, {}).get(name, modules.get(mod, BASE))

    return {
        "schema": SCHEMA,
        "floor": _fmt(FLOOR),
        "modules": {m: _fmt(v) for m, v in sorted(modules.items()) if v >= FLOOR and not _private(m)},
        "removed": {m: _fmt(v) for m, v in sorted(removed.items()) if not _private(m)},
        "names": {
            m: {n: _fmt(v) for n, v in sorted(ns.items()) if v >= FLOOR and v > modules.get(m, BASE)}
            for m, ns in sorted(names.items())
            if any(v >= FLOOR and v > modules.get(m, BASE) for v in ns.values())
        },
        "parameters": since_floor(params, {k: first_of(k) for k in params}),
        "members": since_floor(members, {k: names.get("builtins", {}).get(k, BASE) for k in members}),
    }


def _dump(doc: dict[str, object]) -> str:
    """The JSON with one module (or function, or class) a line: compact, and a diff shows which."""
    lines = ["{"]
    for i, (key, value) in enumerate(doc.items()):
        end = "," if i < len(doc) - 1 else ""
        if isinstance(value, dict) and value:
            inner = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()]
            lines.append(f"{json.dumps(key)}: {{\n" + ",\n".join(inner) + f"\n}}{end}")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value)}{end}")
    return "\n".join(lines) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--git", nargs="+", metavar=("GIT_DIR", "COMMIT"), help="typeshed's git dir and commits")
    ap.add_argument("--dir", type=Path, action="append", default=[], help="a stdlib folder (tests)")
    ap.add_argument("-o", "--output", type=Path, default=OUT)
    args = ap.parse_args(argv)
    sources: list[Source] = [Source(directory=d) for d in args.dir]
    refs = []
    if args.git:
        git_dir, *commits = args.git
        sources += [Source(git_dir=Path(git_dir), commit=c) for c in commits]
        refs = [
            {"repository": REPOSITORY, "commit": c, "url": f"{REPOSITORY}/tree/{c}/stdlib"} for c in commits
        ]
    if not sources:
        ap.error("give --git GIT_DIR COMMIT… or --dir STDLIB")
    doc = merge([read_source(s) for s in sources])
    doc = {"schema": doc.pop("schema"), "sources": refs, **doc}
    args.output.write_text(_dump(doc), encoding="utf-8")
    print(f"wrote {args.output}: {len(doc['modules'])} modules, {sum(map(len, doc['names'].values()))} names")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
