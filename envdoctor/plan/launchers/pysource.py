"""Python job declarations read by their syntax tree, never run: the calls of a launcher's SDK
and the literal values of their arguments (a module-level ``N_NODES = 2`` is followed; any
other expression is ``UNKNOWN``)."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from typing import Any

#: an argument whose value is not a literal envdoctor reads
UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()


def notebook_code(text: str) -> str:
    """A Jupyter notebook's code cells as one Python text (shell ``!`` and magic ``%`` lines
    blanked); the text itself when it is not a notebook's JSON."""
    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError):
        return text
    out: list[str] = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source")
        lines = source if isinstance(source, list) else [source] if isinstance(source, str) else []
        body = "".join(x for x in lines if isinstance(x, str))
        out.append("\n".join("" if ln.lstrip().startswith(("!", "%")) else ln for ln in body.splitlines()))
    return "\n".join(out)


def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def constants(tree: ast.Module) -> dict[str, Any]:
    """Names assigned once to a literal (``N_NODES = 2``), in the order of the text; a string
    extended with ``+=`` keeps its literal parts."""
    out: dict[str, Any] = {}
    twice: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(node.op, ast.Add)
        ):
            # ``cmd += f"--name {x}"``: a command built in steps keeps its literal start (the
            # launcher and script it names); a part that is not a literal is left out
            added = literal(node.value, out)
            if isinstance(out.get(node.target.id), str):
                out[node.target.id] += added if isinstance(added, str) else ""
            continue
        targets = node.targets if isinstance(node, ast.Assign) else []
        for t in targets:
            if isinstance(t, ast.Name):
                if t.id in out or t.id in twice:
                    twice.add(t.id)
                    out.pop(t.id, None)
                    continue
                value = literal(node.value, {}) if isinstance(node, ast.Assign) else UNKNOWN
                if value is not UNKNOWN:
                    out[t.id] = value
                else:
                    twice.add(t.id)
    return out


def name_of(func: ast.expr) -> str:
    """``command`` of ``command(...)``, ``PyTorch`` of ``sagemaker.pytorch.PyTorch(...)``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def literal(node: ast.expr | None, consts: dict[str, Any]) -> Any:
    """The value of ``node`` where it is a literal (or a call of a class with literal keyword
    arguments: ``{"__call__": name, **kwargs}``); ``UNKNOWN`` otherwise."""
    if node is None:
        return UNKNOWN
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return consts.get(node.id, UNKNOWN)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [literal(x, consts) for x in node.elts]
        return UNKNOWN if any(x is UNKNOWN for x in items) else items
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=False):
            key = literal(k, consts) if k is not None else UNKNOWN
            if key is UNKNOWN or isinstance(key, (list, dict)):
                return UNKNOWN
            out[key] = literal(v, consts)
        return out
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            got = literal(v.value, consts) if isinstance(v, ast.FormattedValue) else literal(v, consts)
            if got is UNKNOWN:
                return UNKNOWN
            parts.append(str(got))
        return "".join(parts)
    if isinstance(node, ast.Call) and not node.args:
        return {"__call__": name_of(node.func), **keywords(node, consts)}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal(node.left, consts), literal(node.right, consts)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    return UNKNOWN


def keywords(call: ast.Call, consts: dict[str, Any]) -> dict[str, Any]:
    """A call's keyword arguments (``**mapping`` makes every key unknown: ``{"**": UNKNOWN}``)."""
    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            out["**"] = UNKNOWN
        else:
            out[kw.arg] = literal(kw.value, consts)
    return out


def calls(tree: ast.Module, names: set[str]) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and name_of(node.func) in names:
            yield node


def imports(tree: ast.Module, package: str) -> bool:
    """Whether the module imports ``package`` (or a module under it)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name == package or a.name.startswith(package + ".") for a in node.names
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and (node.module == package or node.module.startswith(package + "."))
        ):
            return True
    return False
