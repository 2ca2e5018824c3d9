"""Where the run's ``import X`` looks before site-packages, and which of those folders hold a
folder or module named like a package of the stack (PKG011, PKG012).

Python's rules (https://docs.python.org/3/library/sys_path_init.html,
https://docs.python.org/3/library/sys.html#sys.path): ``sys.path[0]`` is the script's folder for
``python path/x.py`` (and for ``accelerate launch x.py`` / ``torchrun x.py`` / ``deepspeed x.py``,
which start ``python x.py``), the working directory for ``python -m mod``; the ``PYTHONPATH``
entries come next; site-packages after them; ``.pth`` lines (a ``src/``-layout editable install)
are appended after site-packages (https://docs.python.org/3/library/site.html). A script's own
``sys.path.insert(0, …)`` puts a folder first, ``sys.path.append(…)`` last. The path finder
takes the first regular package (a folder with ``__init__.py``) or module ``X.py`` it meets on
the path; a folder without ``__init__.py`` is a namespace portion, kept only when no regular
package or module of that name comes later on the path (PEP 420,
https://docs.python.org/3/reference/import.html#namespace-packages).

What is read: a few ``stat`` calls per path folder (one per name looked for), the training script's text
(its ``sys.path`` calls, by AST); never a walk of the tree.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envdoctor.plan.interface import Launch
from envdoctor.plan.script_file import script_file


@dataclass(frozen=True)
class PathEntry:
    """One folder of the run's import path: ``folder`` absolute, ``shown`` as the user writes it,
    ``why`` how it gets there (words), ``source`` the same as one of ``script`` (sys.path[0] of a
    ``.py`` script), ``cwd`` (sys.path[0] under ``-m``), ``pythonpath``, ``code`` (the script's
    own ``sys.path`` call); ``before_site`` whether it comes before site-packages."""

    folder: str
    shown: str
    why: str
    before_site: bool = True
    source: str = "script"


@dataclass(frozen=True)
class Shadow:
    """A folder or module of a path entry named like a package: ``kind`` is ``package`` (a folder
    with ``__init__.py``), ``module`` (``X.py``) or ``namespace`` (a folder without
    ``__init__.py``)."""

    name: str
    path: str
    kind: str
    entry: PathEntry


def _show(path: str, cwd: str) -> str:
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith("..") else ("." if rel == "." else rel)


def _python(launch: Launch) -> bool:
    return launch.launcher in ("python", "accelerate", "torchrun", "deepspeed")


def path_entries(
    launch: Launch | None,
    env: dict[str, str],
    cwd: str,
    script_text: str | None = None,
    edited: Mapping[str, str] | None = None,
) -> list[PathEntry]:
    """The run's import path folders envdoctor can place, in the order import searches them.
    ``edited``: files as ``envdoctor fix`` edited them in memory (``Plan.edited``, by
    ``os.path.normpath``): the script's ``sys.path`` calls are read there, not on disk."""
    if script_text is None and edited and launch is not None:
        path = script_file(launch)
        if path:
            script_text = edited.get(os.path.normpath(path)) or edited.get(
                os.path.normpath(os.path.join(cwd, path))
            )
    first: list[PathEntry] = []
    if launch is not None and _python(launch):
        if launch.script and launch.script.endswith(".py"):
            folder = os.path.dirname(os.path.abspath(os.path.join(cwd, launch.script)))
            first.append(
                PathEntry(
                    folder, _show(folder, cwd), f"the script's folder (sys.path[0] for `{launch.script}`)"
                )
            )
        elif launch.module:
            first.append(
                PathEntry(
                    cwd, ".", f"the working directory (sys.path[0] for `-m {launch.module}`)", source="cwd"
                )
            )
    pythonpath = (launch.env.get("PYTHONPATH") if launch is not None else None) or env.get("PYTHONPATH") or ""
    for part in pythonpath.split(os.pathsep):
        if part and "$" not in part:
            folder = os.path.abspath(os.path.join(cwd, os.path.expanduser(part)))
            first.append(
                PathEntry(folder, _show(folder, cwd), f"PYTHONPATH entry `{part}`", source="pythonpath")
            )
    inserted, appended = _script_paths(launch, cwd, script_text)
    entries = inserted + first + appended
    seen: set[str] = set()
    out = []
    for e in entries:
        if e.folder not in seen:
            seen.add(e.folder)
            out.append(e)
    return out


def _script_paths(
    launch: Launch | None, cwd: str, text: str | None
) -> tuple[list[PathEntry], list[PathEntry]]:
    """The folders the training script itself puts on ``sys.path`` (``insert``: first, the last
    call first; ``append``: after site-packages), where the argument is a literal path or built
    from ``__file__`` (``Path(__file__).resolve().parent.parent / "src"``, ``os.path.join(
    os.path.dirname(__file__), "..")``)."""
    path = script_file(launch) if launch is not None else None  # a `-m` module's file too
    if not path:
        return [], []
    script = os.path.abspath(os.path.join(cwd, path))
    if text is None:
        try:
            with open(script, encoding="utf-8", errors="replace") as fh:
                text = fh.read(400_000)
        except OSError:
            return [], []
    if "sys.path" not in text:
        return [], []
    # not the whole file: its one-line statements that name sys.path, and the module-level
    # assignments of a name from __file__ or a literal path they may use (a few tiny parses)
    body: list[ast.stmt] = []
    for no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        top = line[:1] not in (" ", "\t")
        if "sys.path." in stripped or (
            top and "=" in stripped and ("__file__" in stripped or "Path(" in stripped)
        ):
            try:
                parsed = ast.parse(stripped)
            except (SyntaxError, ValueError):
                continue
            for stmt in parsed.body:
                ast.increment_lineno(stmt, no - 1)
                body.append(stmt)
    tree = ast.Module(body=body, type_ignores=[])
    inserted: list[PathEntry] = []
    appended: list[PathEntry] = []
    names: dict[str, ast.AST] = {}  # module-level NAME = <path expression>, read in order
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            names[stmt.targets[0].id] = stmt.value
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        target = node.func.value
        if not (isinstance(target, ast.Attribute) and target.attr == "path" and _name(target.value) == "sys"):
            continue
        how = node.func.attr
        arg = node.args[-1] if node.args else None
        if how not in ("insert", "append") or arg is None:
            continue
        if how == "insert" and not (isinstance(node.args[0], ast.Constant) and node.args[0].value == 0):
            continue
        folder = _value(arg, script, cwd, names)
        if folder is None:
            continue
        folder = os.path.normpath(folder)
        where = "first" if how == "insert" else "last"
        said = f"put {where} by {_show(script, cwd)} line {node.lineno}: sys.path.{how}(…)"
        entry = PathEntry(folder, _show(folder, cwd), said, before_site=how == "insert", source="code")
        if how == "insert":
            inserted.insert(0, entry)
        else:
            appended.append(entry)
    return inserted, appended


def _name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else ""


def _value(
    node: ast.AST, script: str, cwd: str, names: dict[str, ast.AST] | None = None, depth: int = 0
) -> str | None:
    """The folder a path expression names, or None where it is not literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return os.path.join(cwd, node.value)
    if isinstance(node, ast.Name) and node.id == "__file__":
        return script
    if isinstance(node, ast.Name) and names and node.id in names and depth < 8:
        return _value(names[node.id], script, cwd, names, depth + 1)
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _value(node.value, script, cwd, names, depth + 1)
        return os.path.dirname(inner) if inner else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _value(node.left, script, cwd, names, depth + 1), _literal(node.right)
        return os.path.join(left, right) if left and right is not None else None
    if isinstance(node, ast.Call):
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else _name(fn)
        if (
            name in ("str", "Path", "PurePath", "abspath", "realpath", "normpath", "fspath")
            and len(node.args) == 1
        ):
            return _value(node.args[0], script, cwd, names, depth + 1)
        if name in ("resolve", "absolute") and isinstance(fn, ast.Attribute) and not node.args:
            return _value(fn.value, script, cwd, names, depth + 1)
        if name == "dirname" and len(node.args) == 1:
            inner = _value(node.args[0], script, cwd, names, depth + 1)
            return os.path.dirname(inner) if inner else None
        if name in ("join", "joinpath") and node.args:
            base_node = fn.value if name == "joinpath" and isinstance(fn, ast.Attribute) else node.args[0]
            rest = node.args if name == "joinpath" else node.args[1:]
            base = _value(base_node, script, cwd, names, depth + 1)
            parts = [_literal(a) for a in rest]
            if base is None or any(p is None for p in parts):
                return None
            return os.path.join(base, *[p for p in parts if p is not None])
    return None


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


#: file systems that match names whatever their case (macOS, Windows), where import compares
#: the spelling itself: a ``Datasets/`` folder is not ``datasets``
_CASELESS = sys.platform in ("darwin", "win32")


def _spelled(folder: str, name: str) -> bool:
    """``folder`` holds ``name`` or ``name.py`` spelled so (one listing, only where a stat
    matched on a caseless file system)."""
    if not (
        os.path.lexists(os.path.join(folder, name)) or os.path.lexists(os.path.join(folder, name + ".py"))
    ):
        return False
    try:
        listed = set(os.listdir(folder))
    except OSError:
        return False
    return name in listed or f"{name}.py" in listed


def shadows(entries: list[PathEntry], names: dict[str, Any]) -> list[Shadow]:
    """Each folder or module of the path entries named like one of ``names`` (import names),
    in path order: a few ``stat`` calls per name and entry, never a listing (a folder of a
    million files costs what an empty one does); a folder that cannot be read, a dangling link
    or a loop of links counts as absent (``os.path.isdir`` / ``isfile`` say False)."""
    found: list[Shadow] = []
    here = os.getcwd()
    for entry in entries:
        if "site-packages" in entry.folder or "dist-packages" in entry.folder:
            continue  # an installed tree put on the path: its packages are the installed ones
        if not os.path.isdir(entry.folder):
            continue
        for name in names:
            path = os.path.join(entry.folder, name)
            if _CASELESS and not _spelled(entry.folder, name):
                continue
            if os.path.isdir(path):
                init = os.path.isfile(os.path.join(path, "__init__.py"))
                found.append(Shadow(name, _show(path, here), "package" if init else "namespace", entry))
            elif os.path.isfile(path + ".py"):
                found.append(Shadow(name, _show(path + ".py", here), "module", entry))
    return found
