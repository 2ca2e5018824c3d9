"""Which of the user's reward functions the probe's worker may import, and from where.

Read in envdoctor's process from source (``ast``), never imported here. Two sources, as the run
names them: the TRL CLI's ``reward_funcs`` (TRL's registry names from ``trl.rewards``, dotted
paths ``pkg.module.func`` imported as the CLI imports them), and a training script's
``GRPOTrainer(reward_funcs=...)``. A script is imported in the worker only when its top level
does nothing but import, define and bind constants (``safe_top_level``): its training code must
sit under ``if __name__ == "__main__":`` (or in functions that block calls). Otherwise the probe
runs its own reward and says why (``own_reason``).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from envdoctor.plan.rewards import RewardFunc, import_names
from envdoctor.plan.rewards import from_script as read_rewards

MAX_SOURCE_BYTES = 2 * 1024 * 1024
#: Calls a script's top level may make: constructors of constants, patterns, loggers, paths.
PURE_CALLS = frozenset(
    {
        "re.compile",
        "logging.getLogger",
        "getLogger",
        "os.environ.get",
        "os.getenv",
        "os.path.join",
        "os.path.dirname",
        "os.path.abspath",
        "Path",
        "pathlib.Path",
        "frozenset",
        "set",
        "tuple",
        "list",
        "dict",
        "str",
        "int",
        "float",
        "bool",
        "TypeVar",
        "typing.TypeVar",
        "namedtuple",
        "collections.namedtuple",
        "field",
        "dataclasses.field",
        "lru_cache",
        "functools.lru_cache",
        "dataclass",
        "dataclasses.dataclass",
    }
)


def dotted(node: ast.expr) -> str:
    """``a.b.c`` for a name or attribute chain, else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = {dotted(e) or _const(e) for e in (test.left, test.comparators[0])}
    return sides == {"__name__", "__main__"}


def _const(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _pure(node: ast.expr | None) -> bool:
    """An expression that runs nothing of the user's: constants, names, containers of them, an
    f-string, arithmetic, and calls of ``PURE_CALLS`` with such arguments."""
    if node is None:
        return True
    if isinstance(node, (ast.Constant, ast.Name, ast.Attribute)):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_pure(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_pure(k) for k in node.keys) and all(_pure(v) for v in node.values)
    if isinstance(node, ast.JoinedStr):
        return all(_pure(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _pure(node.value)
    if isinstance(node, ast.BinOp):
        return _pure(node.left) and _pure(node.right)
    if isinstance(node, ast.UnaryOp):
        return _pure(node.operand)
    if isinstance(node, (ast.BoolOp,)):
        return all(_pure(v) for v in node.values)
    if isinstance(node, ast.Compare):
        return _pure(node.left) and all(_pure(c) for c in node.comparators)
    if isinstance(node, ast.Subscript):
        return _pure(node.value) and _pure(node.slice)
    if isinstance(node, ast.Lambda):
        return True  # defined, not run
    if isinstance(node, ast.Call):
        return (
            dotted(node.func) in PURE_CALLS
            and all(_pure(a) for a in node.args)
            and all(_pure(k.value) for k in node.keywords)
        )
    return False


def _pure_def(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """A definition whose decorators, defaults and bases run nothing of the user's."""
    if not all(_pure(d) for d in node.decorator_list):
        return False
    if isinstance(node, ast.ClassDef):
        return (
            all(_pure(b) for b in node.bases)
            and all(_pure(k.value) for k in node.keywords)
            and safe_body(node.body) is None
        )
    args = node.args
    return all(_pure(d) for d in [*args.defaults, *args.kw_defaults])


def safe_body(body: list[ast.stmt]) -> str | None:
    """The first statement of ``body`` (a module's or a class's) that would run code on import,
    described with its line, or None when importing it only imports, defines and binds."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if _pure_def(node):
                continue
            line = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return f"line {line}: the definition of {node.name} runs code (a decorator or default)"
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.Assign) and _pure(node.value):
            continue
        if isinstance(node, (ast.AnnAssign,)) and _pure(node.value):
            continue
        if isinstance(node, ast.If):
            if _is_main_guard(node):
                continue  # the training code: not run when the script is imported
            if _pure(node.test) and safe_body(node.body) is None and safe_body(node.orelse) is None:
                continue
        if isinstance(node, ast.Try):
            inner = [*node.body, *node.orelse, *node.finalbody]
            inner += [s for h in node.handlers for s in h.body]
            if safe_body(inner) is None:
                continue
        text = ast.unparse(node).splitlines()[0][:80] if hasattr(ast, "unparse") else type(node).__name__
        return f"line {node.lineno}: `{text}`"
    return None


def safe_top_level(tree: ast.Module) -> str | None:
    """Why importing the script would run more than imports, definitions and constants (with
    the statement and its line), or None: its top level is safe to import."""
    return safe_body(tree.body)


def _not_imported(func: RewardFunc) -> str:
    """Why importing the script does not give ``func`` (the plan's reading of the call)."""
    line = func.where.rsplit(":", 1)[-1]
    if func.name == "<lambda>":
        return f"a lambda (line {line}) cannot be imported"
    if func.name.startswith("partial("):
        return f"`{func.name}` (line {line}) is built at run time"
    if "." in func.name:
        return f"{func.name} (line {line}) is a method of an object built at run time"
    return f"{func.name} (line {line}) is defined inside a function or the __main__ block"


def from_script(path: Path) -> dict[str, Any]:
    """The worker's reward spec for a training script: ``{"script", "attrs"}``, or
    ``{"own_reason"}`` saying why the probe keeps its own reward."""
    try:
        return _from_script(path)
    except (RecursionError, MemoryError):
        return {"own_reason": f"the training script {path.name} is nested too deeply to read"}


def _from_script(path: Path) -> dict[str, Any]:
    shown = path.name
    try:
        if not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
            return {"own_reason": f"the training script {shown} is not a readable file under 2 MiB"}
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return {"own_reason": f"the training script {shown} could not be parsed ({type(exc).__name__})"}
    # which functions the trainer gets: the plan's reading (one reader, one answer)
    reading = read_rewards(path)
    if reading.open_sources:
        return {
            "own_reason": f"{shown} gives GRPOTrainer {reading.open_sources[0]}, whose fields reach the "
            "reward functions as keywords: the probe does not run it"
        }
    if not reading.calls:
        return {"own_reason": f"{shown} passes no reward_funcs to a GRPOTrainer(...) call"}
    if reading.calls > 1:
        return {
            "own_reason": f"{shown} builds {reading.calls} GRPOTrainer(...) calls: "
            "which one runs is not known"
        }
    if reading.models:
        return {
            "own_reason": f"{reading.models[0]!r} names a reward model: "
            "the probe loads no model of the user's"
        }
    if reading.unresolved:
        return {
            "own_reason": f"{shown}: {reading.unresolved[0]} (built at run time, or bound where the source "
            "does not say which); only module-level functions can be imported"
        }
    # the same functions, as importing the script binds them (its __main__ block does not run)
    view = ast.Module(
        body=[s for s in tree.body if not (isinstance(s, ast.If) and _is_main_guard(s))], type_ignores=[]
    )
    attrs = import_names(view, path, reading.funcs)
    for func, attr in zip(reading.funcs, attrs, strict=True):
        if attr is None:
            return {
                "own_reason": f"{shown}: {_not_imported(func)}; only module-level functions can be imported"
            }
    unsafe = safe_top_level(tree)
    if unsafe:
        return {
            "own_reason": f"importing {shown} would run its top level ({unsafe}); put the training "
            'code under `if __name__ == "__main__":` so the probe can import the reward functions'
        }
    return {
        "script": str(path.resolve()),
        "attrs": [a for a in attrs if a],
        "root": str(path.resolve().parent),
    }


def from_cli(names: list[str], root: Path) -> dict[str, Any]:
    """The worker's reward spec for ``trl grpo --reward_funcs``: registry names and dotted paths."""
    items: list[dict[str, str]] = []
    for raw in names:
        name = str(raw).strip()
        if "/" in name or name.endswith((".bin", ".safetensors")):
            return {"own_reason": f"{name!r} names a reward model: the probe loads no model of the user's"}
        module, _, attr = name.rpartition(".")
        if module:
            items.append({"module": module, "attr": attr})
        else:
            items.append({"registry": name})
    if not items:
        return {"own_reason": "reward_funcs is empty"}
    return {"items": items, "root": str(root)}
