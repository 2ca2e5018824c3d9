"""``setup.py`` read as a syntax tree, never run: ``setup(install_requires=…, extras_require=…,
python_requires=…)`` with the lists, dicts, ``+`` and names of the module they are built from.

Projects built on transformers' ``setup.py`` (open-r1 and its descendants) keep one list of
requirement strings (``_deps``) and pick from it by name (``deps["trl"]``,
``deps_list("torch", …)``): a lookup the tree cannot evaluate is answered from the module's
requirement strings by package name. A value the tree cannot follow (a file read at build time,
a function call) is said in a note.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from envdoctor.facts.declared.interface import Declaration, Found, requirement, spend, text_of
from envdoctor.facts.interface import normalize_name
from envdoctor.facts.packages import parse_requirement

PATTERNS = ("setup.py",)
#: a setup.py is read up to this size (a real one is a few KiB)
MAX_BYTES = 1024 * 1024
#: how deep names are followed (``install_requires = base + extras["x"]`` …)
MAX_DEPTH = 12


def read(path: Path, shown: str) -> Found:
    found = Found(files=[shown])
    text = text_of(path, shown, MAX_BYTES)
    try:
        tree = ast.parse(text, filename=shown)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        found.notes.append(f"{shown}: not valid Python; not read")
        return found
    reader = _Module(tree, shown)
    call = next((c for c in ast.walk(tree) if isinstance(c, ast.Call) and _is_setup(c)), None)
    if call is None:
        found.notes.append(f"{shown}: no setup(...) call; not read")
        return found
    items: list[tuple[str, int]] = []
    for kw in call.keywords:
        if kw.arg in ("install_requires", "extras_require", "tests_require"):
            items += list(reader.strings(kw.value))
        elif kw.arg == "python_requires":
            python = list(reader.strings(kw.value))
            if python:
                found.declarations.append(Declaration("python", python[0][0].strip(), shown, python[0][1]))
        elif kw.arg is None:  # setup(**kwargs): not followed
            found.notes.append(f"{shown}:{call.lineno}: setup(**…) arguments are not read")
    spend(shown, len(items))
    for text_, line in dict.fromkeys(items):
        decl = requirement(text_, shown, line)
        if decl is not None:
            found.declarations.append(decl)
    found.notes += reader.notes
    return found


def _is_setup(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Name) and f.id == "setup") or (
        isinstance(f, ast.Attribute) and f.attr == "setup"
    )


class _Module:
    """Module-level assignments of a setup.py, followed by name."""

    def __init__(self, tree: ast.Module, shown: str) -> None:
        self.shown = shown
        self.notes: list[str] = []
        self.names: dict[str, list[ast.expr]] = {}
        self.items: dict[tuple[str, str], list[ast.expr]] = {}  # extras["dev"] = [...]
        for node in tree.body:
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets, value = [node.target], node.value
            for t in targets:
                if isinstance(t, ast.Name) and value is not None:
                    self.names.setdefault(t.id, []).append(value)
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and value is not None:
                    key = _constant(t.slice)
                    if key is not None:
                        self.items.setdefault((t.value.id, key), []).append(value)
        # every requirement-like string of the module, by package name: what ``deps["trl"]``
        # and ``deps_list("trl")`` look up
        self.pool: dict[str, tuple[str, int]] = {}
        for found in ast.walk(tree):
            # a string in a list / tuple / set is an entry of a table of requirements (a bare
            # "trl" too); elsewhere only one with a specifier, extras or URL looks like one
            listed = isinstance(found, (ast.List, ast.Tuple, ast.Set))
            for item in found.elts if listed else [found]:  # type: ignore[attr-defined]
                if isinstance(item, ast.Constant) and isinstance(item.value, str) and len(item.value) < 500:
                    req = parse_requirement(item.value.strip())
                    if req is not None and (listed or req.specifier or req.url or req.extras):
                        self.pool.setdefault(normalize_name(req.name), (item.value, item.lineno))

    def strings(self, node: ast.expr, depth: int = 0) -> Iterator[tuple[str, int]]:
        """The string constants ``node`` stands for, with their lines."""
        if depth > MAX_DEPTH:
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value, node.lineno
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for elt in node.elts:
                yield from self.strings(elt.value if isinstance(elt, ast.Starred) else elt, depth + 1)
        elif isinstance(node, ast.Dict):
            for value in node.values:
                yield from self.strings(value, depth + 1)
        elif isinstance(node, ast.BinOp):
            yield from self.strings(node.left, depth + 1)
            yield from self.strings(node.right, depth + 1)
        elif isinstance(node, ast.Name):
            values = self.names.get(node.id)
            if values is None:
                return
            for value in values:
                yield from self.strings(value, depth + 1)
            for (name, _key), assigned in self.items.items():  # extras["dev"] = … after extras = {}
                if name == node.id:
                    for value in assigned:
                        yield from self.strings(value, depth + 1)
        elif isinstance(node, ast.Subscript):
            key = _constant(node.slice)
            if isinstance(node.value, ast.Name) and key is not None:
                if (node.value.id, key) in self.items:
                    for value in self.items[(node.value.id, key)]:
                        yield from self.strings(value, depth + 1)
                    return
                hit = self.pool.get(normalize_name(key))
                if hit is not None:
                    yield hit
        elif isinstance(node, ast.Call):
            # deps_list("torch", "trl"), list(...), sorted(...): strings named by the arguments
            for arg in node.args:
                wanted = _constant(arg)
                if wanted is not None and normalize_name(wanted) in self.pool:
                    yield self.pool[normalize_name(wanted)]
                elif wanted is None:
                    yield from self.strings(arg, depth + 1)
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("read", "readlines", "splitlines"):
                self.notes.append(
                    f"{self.shown}:{node.lineno}: requirements read from a file at build time; not followed"
                )
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            for gen in node.generators:
                yield from self.strings(gen.iter, depth + 1)


def _constant(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
