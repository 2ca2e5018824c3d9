#!/usr/bin/env python3
"""Derive the line history of the stack's functions: the lines any commit removed together with
the names the function stopped using (maintainer command).

The fix history (scripts/derive_fix_history.py) keeps only commits whose subject says fix / bug /
…; API drift is often fixed by a commit that says neither ("latest bnb no longer has optim_args
attribute on optimizer", huggingface/accelerate#3311). This index keeps, for every commit of the
default branch's first-parent history (the ``.py`` files under the package's folders, read as the
fix history reads them), each removed line of a function (or of a module's top level,
``<module>``) that referenced a name the function no longer uses after the commit:

* the names a line references, by role: ``a:`` an attribute read (``x.optim_bits``,
  ``getattr(x, "optim_bits")`` without a default) or deleted (``del x.optim_bits``), ``i:`` a
  name imported from a module, ``m:`` a module imported, ``k:`` a keyword passed to a call, ``n:``
  a bare name read (a callee is an ``n:`` or ``a:`` name) — what an ``AttributeError``,
  ``ImportError`` / ``ModuleNotFoundError``, ``TypeError`` (unexpected keyword; a callee's arity)
  or ``NameError`` names;
* a name is *dropped* where the function after the commit has no reference of that role to it
  outside a ``try`` whose handlers catch that role's exception (``AttributeError`` for ``a:``,
  ``ImportError`` for ``i:`` / ``m:``, ``TypeError`` for ``k:``, ``NameError`` for
  ``n:``, or ``Exception``) without re-raising; and the files the commit changed hold fewer such
  references after it than before (a refactor that moved the name into a helper of the same change
  keeps it: not dropped); and the function at the newest commit read holds none either (a revert);
  a read under a test for its name (``if hasattr(x, "a"):``, ``getattr(x, "a", None) and x.a``,
  ``if "a" in x.__dict__:``, ``tested``) is no reference after the commit (a guard wrapped around
  the read is the change), though a removed read under such a test still counts as one that failed
  (a proxy's ``hasattr`` forwards where its ``del`` does not), dropped only where the function
  after holds no read of the name at all;
* the line's hash (``line_hash``, the fix history's) is kept with those names; where the line was
  inside a statement over several lines, the hash of the statement's first line — the line a
  traceback prints — is kept too, with a ``~`` before it (a changed statement, not a removed line).

The release that first ships each commit is the fix history's (``releases_of``); commits after the
newest release are left out (the answer is an upgrade). Only commits with a kept line are listed.

It writes ``rules/knowledge/linehist/DIST.json.gz`` (schema ``envdoctor.linehist/1``)::

    {"schema": …, "package": "accelerate", "source": "huggingface/accelerate", "head": "<sha>",
     "head_date": "2026-07-24", "since": "2024-01-01", "releases": ["0.26.0", …],
     "commits": [[sha10, date, release, subject, number], …],
     "functions": {"utils/deepspeed.py": {"map_pytorch_optim_to_deepspeed":
                                          [[commit, "a1b2c3", "a:optim_bits"], …]}}}

Triage (envdoctor/triage/linehist.py) reads a package's file only for a drift-shaped exception
raised with a frame in that package; the static check never does.

Usage (the mirrors: ``git clone --mirror URL``, or the session's ``fetch`` tool)::

    # 2026-11-30 (issue #36 item 2): from mirrors of the same heads as the fix history's files
    # (accelerate 2026-07-24, deepspeed 2026-08-22, …); trl and the other stacks not yet (a name
    # moved to another file by the commit: docs/knowledge-sources.md):
    python scripts/derive_line_history.py --all --mirrors /work/.mirror --only accelerate \
        --only deepspeed --only peft --only liger-kernel --only openrlhf --only unsloth \
        --only unsloth-zoo --only verl --only areal
    # 2026-11-30 (issue #36, a raise made for the caller): unsloth again from the same head, with
    # ``del x.name`` read as a reference and a guard added around a read kept (32 KB):
    python scripts/derive_line_history.py --all --mirrors /work/.mirror --only unsloth

Offline: it reads the git directory only (``git`` on the path).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/sibling.py
from sibling import load  # noqa: E402

fh = load("derive_fix_history")

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "linehist"
SCHEMA = "envdoctor.linehist/1"
BUDGET = 1_500_000
MIN_LINE = fh.MIN_LINE  # a removed line shorter than this tells no code apart
MIN_FIRST = 8  # a statement's first line kept for a removed line inside it
MAX_NAMES = 4  # names kept per line
MAX_SUBJECT = 100
MODULE = "<module>"

#: the exceptions that a role's failure raises, and those that catch any of them
CAUGHT = {
    "a": frozenset(("AttributeError",)),
    "i": frozenset(("ImportError", "ModuleNotFoundError")),
    "m": frozenset(("ImportError", "ModuleNotFoundError")),
    "k": frozenset(("TypeError",)),
    "n": frozenset(("NameError",)),
}
BROAD = frozenset(("Exception", "BaseException"))
_IDENT = re.compile(r"[A-Za-z_]\w*")
#: an added line that may guard a read: a handler, a ``getattr`` / ``hasattr``, a test ``"x" in``
_GUARD = re.compile(r"except|(?:get|has)attr\(|[\"']\w+[\"'] (?:not )?in\b")


def _caught(handler: ast.ExceptHandler) -> frozenset[str]:
    """The exceptions ``handler`` catches for good (one that re-raises catches none): a bare
    ``except`` catches ``BaseException``."""
    if any(isinstance(n, ast.Raise) and n.exc is None for n in ast.walk(handler)):
        return frozenset()
    t = handler.type
    if t is None:
        return frozenset(("BaseException",))
    parts = t.elts if isinstance(t, ast.Tuple) else [t]
    out = set()
    for p in parts:
        if isinstance(p, ast.Name):
            out.add(p.id)
        elif isinstance(p, ast.Attribute):
            out.add(p.attr)
    return frozenset(out)


def _guarded(kind: str, caught: frozenset[str]) -> bool:
    return bool(caught & (CAUGHT[kind] | BROAD))


Ref = tuple[str, str, int, int, bool]  # role, name, first line, last line, guarded


def refs(nodes: list[ast.AST]) -> list[Ref]:
    """The names ``nodes`` reference, by role, with the lines each is on and whether a ``try``
    around it catches that role's exception; nested functions and classes are not walked (their
    own scopes)."""
    out: list[Ref] = []

    fallback: set[tuple[str, str]] = set()  # names a ``try`` around guards: its handlers' fallbacks

    def add(kind: str, name: str, node: ast.AST, caught: frozenset[str]) -> None:
        a = getattr(node, "lineno", 0)
        b = getattr(node, "end_lineno", None) or a
        if name and a:
            out.append((kind, name, a, b, _guarded(kind, caught) or (kind, name) in fallback))

    def walk(node: ast.AST, caught: frozenset[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            handlers = node.handlers  # type: ignore[attr-defined]
            inner = caught.union(*(_caught(h) for h in handlers))
            start = len(out)
            for s in node.body:  # type: ignore[attr-defined]
                walk(s, inner)
            # a handler's read of a name its try guards is the fallback when the first read fails
            # (``except AttributeError: is_adaw = optimizer.args.optim_bits == 32``)
            own = {
                (k, n)
                for k, n, _, _, g in out[start:]
                if g and _guarded(k, inner) and not _guarded(k, caught)
            }
            added = own - fallback
            fallback.update(added)
            for h in handlers:
                walk(h, caught)
            fallback.difference_update(added)
            for part in (node.orelse, node.finalbody):  # type: ignore[attr-defined]
                for s in part:
                    walk(s, caught)
            return
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Load, ast.Del)):
            add("a", node.attr, node, caught)  # ``del x.name`` fails as a read does
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            add("n", node.id, node, caught)
        elif isinstance(node, ast.Call):
            f = node.func  # the callee is an ``n:`` or ``a:`` reference of its own
            for kw in node.keywords:
                if kw.arg:
                    out.append(
                        ("k", kw.arg, node.lineno, node.end_lineno or node.lineno, _guarded("k", caught))
                    )
            if (
                isinstance(f, ast.Name)
                and f.id == "getattr"
                and len(node.args) == 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                add("a", node.args[1].value, node, caught)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            add("m", node.module, node, caught)
            for alias in node.names:
                add("i", alias.name, node, caught)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                add("m", alias.name, node, caught)
        for child in ast.iter_child_nodes(node):
            walk(child, caught)

    for n in nodes:
        walk(n, frozenset())
    return out


def _tested(test: ast.AST) -> set[str]:
    """The attribute names a condition tests for: ``hasattr(x, "name")``, ``getattr(x, "name",
    default)``, ``"name" in x`` (``x.__dict__``, ``dir(x)``)."""
    out: set[str] = set()
    for n in ast.walk(test):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and (n.func.id == "hasattr" and len(n.args) == 2 or n.func.id == "getattr" and len(n.args) == 3)
            and isinstance(n.args[1], ast.Constant)
            and isinstance(n.args[1].value, str)
        ):
            out.add(n.args[1].value)
        elif (
            isinstance(n, ast.Compare)
            and isinstance(n.left, ast.Constant)
            and isinstance(n.left.value, str)
            and any(isinstance(op, ast.In) for op in n.ops)
        ):
            out.add(n.left.value)
    return out


def tested(nodes: list[ast.AST]) -> set[tuple[str, int]]:
    """The attribute reads (name, line) that run only where a condition tested for the name first
    (``if hasattr(x, "name"): x.name``, ``hasattr(x, "name") and x.name``, a conditional
    expression): a guard weaker than a ``try`` (a proxy's ``hasattr`` forwards where its ``del``
    does not), read as the change that fixes a failure of the unguarded read it replaced, never as
    a line that could not fail."""
    out: set[tuple[str, int]] = set()

    def mark(node: ast.AST, names: set[str]) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and n.attr in names:
                out.add((n.attr, n.lineno))

    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, (ast.If, ast.IfExp, ast.While)):
                names = _tested(n.test)
                if names:
                    for part in n.body if isinstance(n.body, list) else [n.body]:
                        mark(part, names)
            elif isinstance(n, ast.BoolOp) and isinstance(n.op, ast.And):
                names = set()
                for v in n.values:
                    if names:
                        mark(v, names)
                    names |= _tested(v)
    return out


def scopes(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Each function's body by its qualified name (``A.f``, ``f.<locals>.g``), and the module's
    top-level statements outside functions and classes (``<module>``); statements only are walked
    (a function is defined by one)."""
    out: dict[str, list[ast.AST]] = {MODULE: [s for s in tree.body]}

    def walk(stmts: list[ast.AST], prefix: str) -> None:
        for child in stmts:
            if isinstance(child, ast.ClassDef):
                walk(child.body, f"{prefix}{child.name}.")  # type: ignore[arg-type]
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                out[name] = [
                    *child.body,
                    *child.args.defaults,
                    *(d for d in child.args.kw_defaults if d is not None),
                ]
                walk(child.body, name + ".<locals>.")  # type: ignore[arg-type]
            else:
                for part in ("body", "orelse", "finalbody", "handlers", "cases"):
                    sub = getattr(child, part, None)
                    if isinstance(sub, list) and sub and not isinstance(sub[0], ast.expr):
                        walk(sub, prefix)

    walk(tree.body, "")  # type: ignore[arg-type]
    return out


def statements(nodes: list[ast.AST]) -> list[tuple[int, int]]:
    """The simple statements of ``nodes`` (and the headers of compound ones) as (first, last) lines."""
    out: list[tuple[int, int]] = []
    for node in nodes:
        for n in ast.walk(node):
            if not isinstance(n, ast.stmt) or isinstance(
                n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ):
                continue
            body = getattr(n, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                out.append((n.lineno, body[0].lineno - 1))  # a compound statement's header
            else:
                out.append((n.lineno, n.end_lineno or n.lineno))
    return out


def bound(nodes: list[ast.AST]) -> set[str]:
    """The names ``nodes`` bind (assigned, a loop's or a handler's target, an argument, an
    import): a ``NameError`` is about a name nothing bound, not a local."""
    out: set[str] = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                out.add(n.id)
            elif isinstance(n, ast.arg):
                out.add(n.arg)
            elif (
                isinstance(n, (ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name
            ):
                out.add(n.name)
    return out


_ANALYSED: dict[str, tuple[ast.Module | None, dict[str, list[ast.AST]]]] = {}


def _analysed(text: str) -> tuple[ast.Module | None, dict[str, list[ast.AST]]]:
    """``text`` parsed and its scopes, for a text seen before (a commit's file before it is the
    file after the previous commit that changed it) from a cache."""
    key = fh.hashlib.blake2s(text.encode(), digest_size=16).hexdigest()
    found = _ANALYSED.get(key)
    if found is None:
        if len(_ANALYSED) > 256:
            _ANALYSED.clear()
        tree = _parse(text)
        found = _ANALYSED[key] = (tree, scopes(tree) if tree is not None else {})
    return found


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _unguarded(found: list[Ref], weak: set[tuple[str, int]] | None = None) -> Counter[tuple[str, str]]:
    """The references no ``try`` guards; with ``weak`` (``tested``), nor a test for the name."""
    return Counter((k, n) for k, n, a, _, g in found if not g and not (weak and k == "a" and (n, a) in weak))


def _strict(nodes: list[ast.AST]) -> Counter[tuple[str, str]]:
    return _unguarded(refs(nodes), tested(nodes))


def _file_refs(
    found: dict[str, list[ast.AST]], lines: list[str], names: set[str], strict: bool = False
) -> Counter[tuple[str, str]]:
    """The unguarded references of a file (its scopes ``found``, its ``lines``) to ``names``
    (``strict``: nor under a test for the name): only the scopes whose text holds one of them are
    walked."""
    out: Counter[tuple[str, str]] = Counter()
    for nodes in found.values():  # every scope: the file's own names, wherever they are
        spans = [(getattr(n, "lineno", 1), getattr(n, "end_lineno", 0) or 0) for n in nodes]
        if not spans:
            continue
        text = "\n".join(lines[min(a for a, _ in spans) - 1 : max(b for _, b in spans)])
        if any(nm.rsplit(".", 1)[-1] in text for nm in names):
            out.update(_strict(nodes) if strict else _unguarded(refs(nodes)))
    return out


def dropped_lines(
    old_text: str, new_text: str, removed: dict[int, str], after_bare: str, added: list[str]
) -> dict[str, list[tuple[str, bool, list[tuple[str, str]]]]]:
    """Per scope of the file before: the removed lines (their text, whether the line itself was
    removed rather than the first line of a statement one of whose lines was) with the names (role,
    name) they referenced that the scope after no longer references, unguarded."""
    old_tree, old_scopes = _analysed(old_text)
    new_tree, new_scopes = _analysed(new_text)
    if old_tree is None or new_tree is None:
        return {}
    old_lines = old_text.splitlines()
    indents: dict[str, set[int]] = {}
    for a in added:
        indents.setdefault(a.strip(), set()).add(len(a) - len(a.lstrip()))
    out: dict[str, list[tuple[str, bool, list[tuple[str, str]]]]] = {}
    file_before = file_after = strict_before = strict_after = None
    counted: set[str] = set()
    for scope, nodes in old_scopes.items():
        if scope not in new_scopes:
            continue  # gone or renamed: no telling whether the name went with it
        spans = [
            (getattr(n, "lineno", 0), getattr(n, "end_lineno", 0) or 0)
            for n in nodes
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        if not any(a <= r <= b for r in removed for a, b in spans):
            continue  # no removed line in it: not walked
        found = refs(nodes)
        lines = {n for n in removed if any(a <= n <= b for k, _, a, b, _ in found)}
        if not lines:
            continue
        after = _unguarded(refs(new_scopes[scope]))
        # a read the scope after makes only under a test for its name: the guard is the change
        after_strict = _strict(new_scopes[scope])
        weak_before = tested(nodes)
        local = bound(nodes)
        stmts = statements(nodes)
        for n in sorted(lines):
            text = removed[n]
            depth = len(text) - len(text.lstrip())
            moved = any(d > depth for d in indents.get(text.strip(), ()))
            if not moved and fh._bare(text).rstrip(",") in after_bare:
                continue  # rewrapped, not removed
            # a read under a test for its name (it failed all the same: a proxy's ``hasattr``)
            # is dropped only where the scope after has no read of it; an unguarded read, where
            # the scope after has none that is not under such a test (the guard is the change)
            names = sorted(
                {
                    (k, nm)
                    for k, nm, a, b, g in found
                    if a <= n <= b
                    and not g
                    and (k, nm) not in (after if k == "a" and (nm, a) in weak_before else after_strict)
                    and not (k == "n" and nm in local)
                }
            )
            if not names:
                continue
            words = {nm for _, nm in names}
            if file_before is None or not words <= counted:
                counted |= words  # the file's references counted for these names (a scope is walked
                file_before = _file_refs(old_scopes, old_lines, counted)  # only where its text has one)
                file_after = _file_refs(new_scopes, new_text.splitlines(), counted)
                strict_before = _file_refs(old_scopes, old_lines, counted, strict=True)
                strict_after = _file_refs(new_scopes, new_text.splitlines(), counted, strict=True)
            assert file_after is not None and strict_before is not None and strict_after is not None
            names = [
                x
                for x in names
                if file_after[x] < file_before[x]
                or (x in after and strict_after[x] < strict_before[x])  # a guard added around it
            ][:MAX_NAMES]
            if not names:
                continue
            rows = out.setdefault(scope, [])
            if len(text.strip()) >= MIN_LINE:
                rows.append((text, True, names))
            first = min((a for a, b in stmts if a <= n <= b), default=n)
            if first != n and 0 < first <= len(old_lines) and len(old_lines[first - 1].strip()) >= MIN_FIRST:
                rows.append((old_lines[first - 1], first in removed, names))
    return out


def _word_counts(text: str) -> Counter[str]:
    return Counter(_IDENT.findall(text))


def derive(
    git_dir: Path,
    package: str,
    roots: tuple[str, ...],
    tags: str = "",
    since: str = fh.SINCE,
    source: str = "",
    ref: str = "HEAD",
) -> dict[str, object]:
    """The line history of ``package`` (the module docstring's layout)."""
    roots = tuple(r.strip("/") for r in roots)
    rows = list(fh.commits(git_dir, roots, since, ref))
    releases, first, by_number = fh.releases_of(git_dir, tags, rows)
    blobs = fh.Blobs(git_dir)
    kept: list[list[object]] = []
    functions: dict[str, dict[str, list[list[object]]]] = {}
    where: dict[tuple[str, str, str], str] = {}  # (module, scope, name) -> repository path: the newest check
    for c in rows:
        release = first.get(c.sha, "")
        number = c.number
        if tags and number and number in by_number:
            alt = by_number[number]
            if not release or fh.Version(alt) < fh.Version(release):
                release = alt
        if not release:
            continue  # after the newest release: no release to upgrade to
        index = len(kept)
        entries = 0
        for f in c.files:
            if not f.path or f.path != f.old_path or not f.path.endswith(".py") or not f.removed_lines:
                continue
            root = next((r for r in roots if f.path.startswith(r + "/")), None)
            if root is None:
                continue
            # cheap, before any parse: the commit uses a name of its removed lines less and the file
            # after it holds that name no more, or it added a handler or a ``getattr``
            guard = any(_GUARD.search(a) for a in f.added_lines)
            if not guard:
                removed_c = _word_counts("\n".join(f.removed_lines.values()))
                added_c = _word_counts("\n".join(f.added_lines))
                fewer = {w for w, n in removed_c.items() if added_c[w] < n}
                if not fewer:
                    continue
                new_text = blobs.get(c.sha, f.path)
                after_n = _word_counts(new_text)
                if all(after_n[w] for w in fewer):
                    continue
            else:
                new_text = blobs.get(c.sha, f.path)
            old_text = blobs.get(c.sha + "^", f.old_path)
            module = f.path[len(root) + 1 :]
            found = dropped_lines(old_text, new_text, f.removed_lines, fh._bare(new_text), f.added_lines)
            for scope, lines in found.items():
                seen: set[str] = set()
                for text, gone, names in lines:
                    h = ("" if gone else "~") + fh.line_hash(text)
                    if h in seen:
                        continue
                    seen.add(h)
                    row: list[object] = [index, h, *(f"{k}:{n}" for k, n in names)]
                    functions.setdefault(module, {}).setdefault(scope, []).append(row)
                    for k, n in names:
                        where[(module, scope, f"{k}:{n}")] = f.path
                    entries += 1
        if entries:
            kept.append([c.sha[:10], c.date, release, c.title[:MAX_SUBJECT], number])
    head = fh.git(git_dir, "rev-parse", ref).strip()
    # a name the function uses again at the newest commit (a revert, a later rewrite): not dropped
    back: set[tuple[str, str, str]] = set()
    by_path: dict[str, list[tuple[str, str, str]]] = {}
    for key, path in where.items():
        by_path.setdefault(path, []).append(key)
    for path, keys in by_path.items():
        tree = _parse(blobs.get(head, path))
        if tree is None:
            continue
        now = scopes(tree)
        for module, scope, name in keys:
            if scope in now and _strict(now[scope])[tuple(name.split(":", 1))]:  # type: ignore[index]
                back.add((module, scope, name))
    blobs.close()
    for module, names in list(functions.items()):
        for scope, entries_ in list(names.items()):
            left = []
            for row in entries_:
                kept_names = [x for x in row[2:] if (module, scope, x) not in back]
                if kept_names:
                    left.append([*row[:2], *kept_names])
            if left:
                names[scope] = left
            else:
                del names[scope]
        if not names:
            del functions[module]
    # the commits still named, renumbered
    used = sorted({r[0] for names in functions.values() for rows_ in names.values() for r in rows_})  # type: ignore[misc]
    renumber = {old: new for new, old in enumerate(used)}
    for names in functions.values():
        for rows_ in names.values():
            for r in rows_:
                r[0] = renumber[r[0]]  # type: ignore[index]
    return {
        "schema": SCHEMA,
        "package": package,
        "source": source,
        "head": head,
        "head_date": fh.git(git_dir, "log", "-1", "--format=%cs", ref).strip(),
        "since": since,
        "releases": releases,
        "commits": [kept[i] for i in used],  # type: ignore[index]
        "functions": functions,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="every package of the fix history (needs --mirrors)")
    ap.add_argument("--mirrors", type=Path, help="folder of mirrors named owner+name/repo (or owner+name)")
    ap.add_argument("--only", action="append", default=[], help="with --all: this package only (repeatable)")
    ap.add_argument("--git-dir", type=Path)
    ap.add_argument("--package")
    ap.add_argument("--root", action="append", default=[], help="a folder of the package in the repository")
    ap.add_argument("--tags", default="", help="release-tag pattern; its first group is the version")
    ap.add_argument("--source", default="", help="owner/name of the repository (recorded)")
    ap.add_argument("--since", default="", help=f"first commit date read (default {fh.SINCE}; SINCE_OF)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET)
    args = ap.parse_args(argv)
    jobs: list[tuple[Path, str, tuple[str, ...], str, str]] = []
    if args.all:
        if args.mirrors is None:
            ap.error("--all needs --mirrors")
        for dist, (folder, repo, roots, tags) in fh.PACKAGES.items():
            if args.only and dist not in args.only:
                continue
            base = args.mirrors / folder
            git_dir = base / "repo" if (base / "repo").is_dir() else base
            if not git_dir.is_dir():
                print(f"{dist}: no mirror at {base}; skipped", file=sys.stderr)
                continue
            jobs.append((git_dir, dist, roots, tags, repo))
    elif args.git_dir and args.package and args.root:
        jobs.append((args.git_dir, args.package, tuple(args.root), args.tags, args.source))
    else:
        ap.error("give --all --mirrors DIR, or --git-dir, --package and --root")
    for git_dir, dist, roots, tags, repo in jobs:
        since = args.since or fh.SINCE_OF.get(dist, fh.SINCE)
        data = derive(git_dir, dist, roots, tags, since, repo)
        size = fh.write(data, args.out / f"{dist}.json.gz")
        n = sum(len(r) for names in data["functions"].values() for r in names.values())  # type: ignore[attr-defined]
        print(f"{dist}: {len(data['commits'])} commits, {n} lines, {size} bytes")  # type: ignore[arg-type]
    total = sum(p.stat().st_size for p in args.out.glob("*.json.gz"))
    print(f"total {total} bytes in {args.out}")
    if total > args.budget:
        print(f"over the budget of {args.budget} bytes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
