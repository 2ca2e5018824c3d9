"""The reward functions a GRPO run passes, read from source (AST), never imported or run.

Two places name them: the TRL CLI's ``reward_funcs`` (TRL's registry names, or dotted import
paths ``pkg.module.func``: trl/scripts/grpo.py), and a training script's
``GRPOTrainer(reward_funcs=...)`` (a function or lambda, a list of them, a name bound to such a
list, functions imported from a local module). What is not readable this way (a factory call, a
package outside the run's folder) is listed in ``unresolved`` with the reason.

What TRL passes a reward function (trl/trainer/grpo_trainer.py ``_calculate_rewards``), by
keyword: ``prompts``, ``completions``, ``completion_ids`` (TRL >= 0.18), ``trainer_state``
(>= 0.20), ``log_extra`` and ``log_metric`` (>= 1.0), and every dataset column but ``prompt``,
``completion`` and ``completion_ids``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from envdoctor import versions

MAX_SOURCE_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 3  # imports followed from the script

#: TRL's own reward arguments and the first release passing each (checked at the tags).
TRL_ARGS = (
    ("prompts", "0"),
    ("completions", "0"),
    ("completion_ids", "0.18.0"),
    ("trainer_state", "0.20.0"),
    ("log_extra", "1.0.0rc1"),
    ("log_metric", "1.0.0rc1"),
)
#: Passed only with a GRPOTrainer argument (``environment_factory``), from this release.
CONDITIONAL = (("environments", "0.29.0"),)
#: GRPOTrainer arguments whose results reach the reward functions as more keywords
#: (``rollout_func``'s extra fields, ``environment_factory``'s environments).
OPEN_SOURCES = ("rollout_func", "environment_factory")
#: Dataset columns TRL does not pass on as keywords.
NOT_PASSED = ("prompt", "completion", "completion_ids")


@dataclass(frozen=True)
class Param:
    name: str
    required: bool
    positional_only: bool = False


@dataclass
class RewardFunc:
    name: str
    where: str  # "rewards.py:12", "trl.rewards (TRL's registry)"
    params: list[Param] = field(default_factory=list)
    var_keyword: bool = False
    #: line of a body that ends without returning a value (TRL then iterates None), else None
    returns_nothing: int | None = None

    @property
    def accepted(self) -> set[str]:
        return {p.name for p in self.params if not p.positional_only}


#: ``trl grpo --reward_funcs`` registry (trl/scripts/grpo.py, trl/rewards): name -> (first TRL
#: release with it, its signature). Each takes ``**kwargs``.
REGISTRY: dict[str, tuple[str, list[Param]]] = {
    "think_format_reward": ("0.18.0", [Param("completions", True)]),
    "get_soft_overlong_punishment": ("0.22.0", [Param("completion_ids", True)]),
    "accuracy_reward": ("0.24.0", [Param("completions", True), Param("solution", True)]),
    "reasoning_accuracy_reward": (
        "0.26.0",
        [Param("completions", True), Param("solution", True), Param("reasoning_delimiters", False)],
    ),
}


@dataclass
class RewardReading:
    funcs: list[RewardFunc] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # names TRL's CLI cannot load
    open_sources: list[str] = field(default_factory=list)  # OPEN_SOURCES the trainer is given


def trl_args(trl_version: str | None) -> list[str]:
    """The keyword arguments TRL itself passes every reward function in this release."""
    return [name for name, since in TRL_ARGS if since == "0" or versions.satisfies(trl_version, f">={since}")]


def conditional_args(trl_version: str | None) -> list[str]:
    """Keywords TRL passes only with some trainer arguments: never required, never unexpected."""
    return [name for name, since in CONDITIONAL if versions.satisfies(trl_version, f">={since}") is not False]


def registry_func(name: str, trl_version: str | None) -> RewardFunc | None:
    entry = REGISTRY.get(name)
    if entry is None or versions.satisfies(trl_version, f">={entry[0]}") is False:
        return None
    return RewardFunc(name, "trl.rewards (TRL's registry)", list(entry[1]), var_keyword=True)


def from_cli(names: list[str], trl_version: str | None, roots: list[Path]) -> RewardReading:
    """``trl grpo --reward_funcs`` names: TRL's registry, else a dotted path read from ``roots``."""
    out = RewardReading()
    for name in names:
        func = registry_func(name, trl_version)
        if func is not None:
            out.funcs.append(func)
            continue
        module, _, attr = name.rpartition(".")
        if not module:
            out.unknown.append(name)
            continue
        path = _module_file(module, roots)
        if path is None:
            out.unresolved.append(f"{name}: module {module} is not a file under {', '.join(map(str, roots))}")
            continue
        _resolve_in_module(path, attr, out, 0)
    return out


def from_script(script: Path) -> RewardReading:
    """The reward functions of every ``GRPOTrainer(...)`` call in ``script``."""
    out = RewardReading()
    tree = _parse(script)
    if tree is None:
        out.unresolved.append(f"{script}: not read (missing, too large or not Python)")
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node.func).endswith("GRPOTrainer"):
            expr = next((kw.value for kw in node.keywords if kw.arg == "reward_funcs"), None)
            if expr is None and len(node.args) > 1:
                expr = node.args[1]
            if expr is not None:
                _resolve(expr, tree, script, out, 0)
            out.open_sources += [k.arg for k in node.keywords if k.arg in OPEN_SOURCES]
    return out


def _shown(path: Path) -> str:
    """A source file as a finding names it: relative to the working folder when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return path.name


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _parse(path: Path) -> ast.Module | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _module_file(module: str, roots: list[Path]) -> Path | None:
    rel = Path(*module.split("."))
    for root in roots:
        for cand in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
            if cand.is_file():
                return cand
    return None


def signature(name: str, where: str, args: ast.arguments) -> RewardFunc:
    """A function's parameters as TRL's keyword call meets them."""
    pos = [*args.posonlyargs, *args.args]
    first_default = len(pos) - len(args.defaults)
    params = [Param(a.arg, i < first_default, i < len(args.posonlyargs)) for i, a in enumerate(pos)]
    params += [Param(a.arg, d is None) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=False)]
    return RewardFunc(name, where, params, var_keyword=args.kwarg is not None)


def returns_nothing(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body that never returns a value: no ``return <value>``, ``yield`` or ``raise`` of its own
    (nested functions and classes excluded), and more than a stub (``...``, ``pass``, a docstring)."""
    body = [
        n
        for n in node.body
        if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) and not isinstance(n, ast.Pass)
    ]
    if not body:
        return False
    todo: list[ast.AST] = list(body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Return) and n.value is not None and not _is_none(n.value):
            return False
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Raise)):
            return False
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return True


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def _resolve(expr: ast.expr, tree: ast.Module, path: Path, out: RewardReading, depth: int) -> None:
    if isinstance(expr, (ast.List, ast.Tuple)):
        for elt in expr.elts:
            _resolve(elt, tree, path, out, depth)
    elif isinstance(expr, ast.Lambda):
        out.funcs.append(signature("<lambda>", f"{_shown(path)}:{expr.lineno}", expr.args))
    elif isinstance(expr, ast.Name):
        _resolve_name(expr.id, tree, path, out, depth)
    elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        target = _imported_module(expr.value.id, tree, path)
        if target is not None:
            _resolve_in_module(target, expr.attr, out, depth + 1)
        else:
            out.unresolved.append(f"{ast.unparse(expr)} ({path.name}:{expr.lineno}): not a local module")
    elif isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return  # a reward model's name or path: TRL loads a model, not a function
    else:
        text = ast.unparse(expr)[:80]
        out.unresolved.append(f"{text} ({path.name}:{getattr(expr, 'lineno', '?')}): not read statically")


def _resolve_name(name: str, tree: ast.Module, path: Path, out: RewardReading, depth: int) -> None:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            func = signature(name, f"{_shown(path)}:{node.lineno}", node.args)
            func.returns_nothing = node.lineno if returns_nothing(node) else None
            out.funcs.append(func)
            return
        if isinstance(node, ast.ClassDef) and node.name == name:
            out.unresolved.append(f"{name} ({path.name}:{node.lineno}): a class")
            return
    nested = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    ]
    stored = any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(tree)
    )
    if nested and stored:  # also bound by an assignment (``correctness, fmt = build_reward_funcs()``):
        # which one the trainer gets depends on scope, and a def local to another function is not it
        out.unresolved.append(f"{name} ({path.name}): bound by an assignment too, not read statically")
        return
    if len(nested) == 1:  # defined inside main() or an `if __name__ == "__main__":` block
        func = signature(name, f"{_shown(path)}:{nested[0].lineno}", nested[0].args)
        func.returns_nothing = nested[0].lineno if returns_nothing(nested[0]) else None
        out.funcs.append(func)
        return
    if len(nested) > 1:
        out.unresolved.append(f"{name} ({path.name}): defined {len(nested)} times")
        return
    for imp in ast.walk(tree):
        if isinstance(imp, ast.ImportFrom):
            node = imp
            for alias in node.names:
                if (alias.asname or alias.name) != name:
                    continue
                if node.module and node.module.split(".")[0] == "trl":
                    known = registry_func(alias.name, None)
                    if known is not None:
                        out.funcs.append(known)
                        return
                target = _from_module(node, path)
                if target is None or depth >= MAX_DEPTH:
                    out.unresolved.append(
                        f"{name} ({path.name}:{node.lineno}): from {node.module}, not a local file"
                    )
                else:
                    _resolve_in_module(target, alias.name, out, depth + 1)
                return
    bound = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        and isinstance(node.value, (ast.List, ast.Tuple, ast.Name, ast.Lambda))
    ]
    if bound and depth < MAX_DEPTH:
        _resolve(bound[-1], tree, path, out, depth + 1)
    else:
        out.unresolved.append(f"{name} ({path.name}): not defined where it could be read")


def _from_module(node: ast.ImportFrom, path: Path) -> Path | None:
    base = path.parent
    for _ in range(max(node.level - 1, 0)):
        base = base.parent
    if node.module is None:
        return None
    return _module_file(node.module, [base] if node.level else [base, Path.cwd()])


def _imported_module(name: str, tree: ast.Module, path: Path) -> Path | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _module_file(alias.name, [path.parent, Path.cwd()])
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _module_file(f"{node.module}.{alias.name}", [path.parent, Path.cwd()])
    return None


def _resolve_in_module(path: Path, attr: str, out: RewardReading, depth: int) -> None:
    tree = _parse(path)
    if tree is None:
        out.unresolved.append(f"{attr}: {path} not read")
        return
    _resolve_name(attr, tree, path, out, depth)
