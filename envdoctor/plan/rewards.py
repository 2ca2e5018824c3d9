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
import os
from collections.abc import Iterator
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
    kind: str = "positional"  # or "kwonly"


@dataclass
class RewardFunc:
    name: str
    where: str  # "rewards.py:12", "trl.rewards (TRL's registry)"
    params: list[Param] = field(default_factory=list)
    var_keyword: bool = False
    kwarg_name: str | None = None  # the name of its ``**kwargs``
    #: line of a body that ends without returning a value (TRL then iterates None), else None
    returns_nothing: int | None = None
    #: keywords the body passes explicitly to a call that also gets its ``**kwargs`` (which it
    #: does not otherwise empty): (keyword, the callee, line); a keyword TRL puts in ``**kwargs``
    #: is then given twice ("got multiple values for keyword argument")
    forwards: list[tuple[str, str, int]] = field(default_factory=list)
    #: line edits that give parameter P the name K TRL passes and bind P = K at the top of the
    #: body: {P: (K, [(line, old lines, new lines), ...])} (a one-line header; the body unchanged)
    renames: dict[str, tuple[str, list[tuple[int, tuple[str, ...], tuple[str, ...]]]]] = field(
        default_factory=dict
    )

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
    calls: int = 0  # the GRPOTrainer(...) calls that pass reward_funcs
    models: list[str] = field(default_factory=list)  # reward models named by a string (TRL loads them)


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


def from_script(script: Path, edited: dict[str, str] | None = None) -> RewardReading:
    """The reward functions of every ``GRPOTrainer(...)`` call in ``script``; ``edited``: files as
    ``envdoctor fix`` edited them in memory (``Plan.edited``), read in place of the disk's."""
    _EDITED.clear()
    _EDITED.update(edited or {})
    try:
        return _from_script(script)
    finally:
        _EDITED.clear()


def _from_script(script: Path) -> RewardReading:
    """The reward functions of every ``GRPOTrainer(...)`` call in ``script`` (TRL's, Unsloth's
    ``UnslothGRPOTrainer``, or a class of the script that subclasses one), each name resolved in
    the scopes the call sees: the functions around it (innermost first), then the module."""
    out = RewardReading()
    tree = _parse(script)
    if tree is None:
        out.unresolved.append(f"{script}: not read (missing, too large or not Python)")
        return out
    src = _Source(tree, script)
    trainers = _trainer_classes(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node.func)
        if not (name.endswith("GRPOTrainer") or name in trainers):
            continue
        expr = next((kw.value for kw in node.keywords if kw.arg == "reward_funcs"), None)
        if expr is None and len(node.args) > 1 and name.endswith("GRPOTrainer"):
            expr = node.args[1]  # GRPOTrainer(model, reward_funcs, ...): TRL's order
        if expr is not None:
            out.calls += 1
            _resolve(expr, src, src.scopes(node), node.lineno, out, 0)
        out.open_sources += [k.arg for k in node.keywords if k.arg in OPEN_SOURCES]
    return out


def import_names(view: ast.Module, script: Path, funcs: list[RewardFunc]) -> list[str | None]:
    """For each of ``funcs`` (read from ``script``'s trainer call), the name (``f``, or
    ``module.f`` for ``import module``) that the module ``view`` binds to that same function
    once it has run, else None. ``view``: ``script``'s top level as an import runs it (the
    caller leaves out what does not run then, e.g. the ``if __name__ == "__main__":`` block).
    Read by the same resolution as the call's names; a partial is not matched (its bound values
    are not compared)."""
    wanted = {(f.name, f.where) for f in funcs if not f.name.startswith("partial(")}
    heads, modules = set(), set()
    for stmt in view.body:
        if isinstance(stmt, (*_FUNC, ast.ClassDef)):
            heads.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            heads |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.ImportFrom):
            heads |= {a.asname or a.name for a in stmt.names}
        elif isinstance(stmt, ast.Import):
            modules |= {a.asname or a.name for a in stmt.names}
    attrs = {f.name.split(".")[-1] for f in funcs}
    # a function's own name first (``REWARD = fmt`` binds fmt too)
    candidates = sorted(heads, key=lambda n: (n not in attrs, n))
    candidates += [f"{m}.{a}" for m in sorted(modules) for a in sorted(attrs)]
    src = _Source(view, script)
    found: dict[tuple[str, str], str] = {}
    for name in candidates:
        out = RewardReading()
        _resolve(ast.parse(name, mode="eval").body, src, [view], 10**9, out, 0)
        if len(out.funcs) == 1 and not out.unresolved:
            key = (out.funcs[0].name, out.funcs[0].where)
            if key in wanted:
                found.setdefault(key, name)
    return [found.get((f.name, f.where)) for f in funcs]


def _trainer_classes(tree: ast.Module) -> set[str]:
    """The script's classes that subclass a GRPO trainer (``class MyTrainer(GRPOTrainer)``,
    ``(UnslothGRPOTrainer)``, or one of those), read to a fixed point."""
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    found: set[str] = set()
    while True:
        more = {
            c.name
            for c in classes
            if c.name not in found
            and any(_call_name(b).endswith("GRPOTrainer") or _call_name(b) in found for b in c.bases)
        }
        if not more:
            return found
        found |= more


class _Source:
    """A parsed file and the parent of each node (for the scopes a node sees)."""

    def __init__(self, tree: ast.Module, path: Path) -> None:
        self.tree, self.path = tree, path
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node

    def scopes(self, node: ast.AST) -> list[ast.AST]:
        """The function scopes around ``node``, innermost first, then the module (class bodies
        are no scope for the names a method uses)."""
        out: list[ast.AST] = []
        cur = self.parent.get(node)
        while cur is not None:
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                out.append(cur)
            cur = self.parent.get(cur)
        return [*out, self.tree]

    def enclosing_class(self, scopes: list[ast.AST]) -> tuple[ast.ClassDef, ast.AST] | None:
        """The class whose method the innermost function is, and that method."""
        for scope in scopes:
            owner = self.parent.get(scope)
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(owner, ast.ClassDef):
                return owner, scope
        return None


_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a scope's body, into its blocks (if, for, with, try) but not into the
    functions and classes it defines (their names are bound here, their bodies are not)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (*_FUNC, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, name, []) or [])
        for handler in getattr(stmt, "handlers", []) or []:
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", []) or []:
            yield from _statements(case.body)


def _bindings(scope: ast.AST, name: str) -> list[ast.AST]:
    """What binds ``name`` in ``scope``: a def, a class, an assignment's value, an import alias,
    or ``None``-valued markers (an unpacking, a loop target) for bindings not read."""
    body = scope.body if isinstance(scope, (*_FUNC, ast.Module)) else []
    out: list[ast.AST] = []
    if isinstance(scope, _FUNC):
        args = scope.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        if any(a is not None and a.arg == name for a in every):
            out.append(ast.arg(arg=name, lineno=scope.lineno))  # a parameter: the caller's value
    if isinstance(scope, ast.Lambda):
        return out
    for stmt in _statements(body):
        if isinstance(stmt, (*_FUNC, ast.ClassDef)) and stmt.name == name:
            out.append(stmt)
        elif _grows(stmt, name) is not None:
            out.append(stmt)  # name.append(f): the list grows (read with the binding before it)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id == name and stmt.value is not None:
                    out.append(stmt)
                elif isinstance(t, (ast.Tuple, ast.List)) and any(
                    isinstance(e, ast.Name) and e.id == name for e in ast.walk(t)
                ):
                    out.append(ast.Starred(value=t, lineno=stmt.lineno))  # an unpacking
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in stmt.names):
                out.append(stmt)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            tgt = (
                [stmt.target]
                if isinstance(stmt, (ast.For, ast.AsyncFor))
                else [i.optional_vars for i in stmt.items if i.optional_vars is not None]
            )
            if any(isinstance(e, ast.Name) and e.id == name for t in tgt for e in ast.walk(t)):
                out.append(ast.Starred(value=tgt[0], lineno=stmt.lineno))
    return out


def _lookup(name: str, scopes: list[ast.AST], line: int) -> tuple[ast.AST | None, list[ast.AST], str]:
    """The binding of ``name`` the code at ``line`` sees, the scopes it lives in, and why none
    was taken ("" when found, or when nothing binds it). In the scope of the code itself the
    last binding before ``line`` counts (``reward = partial(reward, tok=tok)`` reads the def
    above it); in an enclosing scope, which ran before, the last one. Several bindings of which
    one sits in a branch or a loop (``if a: r = f`` / ``else: r = g``) are not read."""
    for i, scope in enumerate(scopes):
        found = _bindings(scope, name)
        if not found:
            continue
        before = [b for b in found if getattr(b, "lineno", 0) < line] if i == 0 else found
        chosen = before or found
        top = {id(s) for s in getattr(scope, "body", [])} if not isinstance(scope, ast.Lambda) else set()
        nested = [b for b in chosen if id(b) not in top and not isinstance(b, ast.arg)]
        if len(chosen) > 1 and nested:
            grown = any(_grows(b, name) is not None for b in nested)
            return (
                None,
                scopes[i:],
                "extended in a branch or a loop (what it holds is not read)"
                if grown
                else "bound more than once there, in a branch or a loop (which one runs is not read)",
            )
        return _grown(chosen, name), scopes[i:], ""
    return None, scopes, ""


def _grows(stmt: ast.AST, name: str) -> list[ast.expr] | None:
    """What ``name.append(x)`` / ``.extend(xs)`` / ``.insert(i, x)`` adds to the list ``name``
    (``xs`` as an operand of ``+``), else None (not such a statement)."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
        and not call.keywords
    ):
        return None
    method, args = call.func.attr, call.args
    if method == "append" and len(args) == 1:
        return [ast.List(elts=[args[0]], ctx=ast.Load())]
    if method == "extend" and len(args) == 1:
        return [args[0]]
    if method == "insert" and len(args) == 2:
        return [ast.List(elts=[args[1]], ctx=ast.Load())]
    return None


def _grown(chosen: list[ast.AST], name: str) -> ast.AST:
    """The last binding, with the appends after it: ``r = [f]`` then ``r.append(g)`` reads as
    ``r = [f] + [g]`` (one Assign made up here); the binding itself where nothing grows it."""
    added: list[ast.expr] = []
    k = len(chosen)
    while k and _grows(chosen[k - 1], name) is not None:
        added = [*(_grows(chosen[k - 1], name) or []), *added]
        k -= 1
    if not added:
        return chosen[-1]
    base = chosen[k - 1] if k else None
    if not isinstance(base, ast.Assign):
        return chosen[-1]  # grown from what is not read here: said as such by the caller
    value: ast.expr = base.value
    for more in added:
        value = ast.BinOp(left=value, op=ast.Add(), right=more)
    return ast.Assign(targets=base.targets, value=value, lineno=base.lineno)


def _resolve(
    expr: ast.expr, src: _Source, scopes: list[ast.AST], line: int, out: RewardReading, depth: int
) -> None:
    path = src.path
    if depth > 8:
        out.unresolved.append(f"{ast.unparse(expr)[:80]} ({path.name}): bound through too many names")
    elif isinstance(expr, (ast.List, ast.Tuple)):
        for elt in expr.elts:
            _resolve(elt, src, scopes, line, out, depth)
    elif isinstance(expr, ast.Starred):
        _resolve(expr.value, src, scopes, line, out, depth)
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):  # [a] + [b]
        _resolve(expr.left, src, scopes, line, out, depth)
        _resolve(expr.right, src, scopes, line, out, depth)
    elif isinstance(expr, ast.Lambda):
        out.funcs.append(signature("<lambda>", f"{_shown(path)}:{expr.lineno}", expr.args))
    elif isinstance(expr, ast.Name):
        _resolve_name(expr.id, src, scopes, line, out, depth)
    elif isinstance(expr, ast.Attribute):
        _resolve_attribute(expr, src, scopes, line, out, depth)
    elif isinstance(expr, ast.Call) and _call_name(expr.func) == "partial":
        _resolve_partial(expr, src, scopes, line, out, depth)
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        cls, _, _ = _lookup(expr.func.id, scopes, line)
        if isinstance(cls, ast.ClassDef):
            _instance(cls, path, out, expr.func.id)
        else:
            text = ast.unparse(expr)[:80]
            out.unresolved.append(f"{text} ({path.name}:{expr.lineno}): not read statically")
    elif isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        out.models.append(expr.value)  # a reward model's name or path: TRL loads a model, not a function
    else:
        text = ast.unparse(expr)[:80]
        out.unresolved.append(f"{text} ({path.name}:{getattr(expr, 'lineno', '?')}): not read statically")


def _resolve_name(
    name: str, src: _Source, scopes: list[ast.AST], line: int, out: RewardReading, depth: int
) -> None:
    path = src.path
    bound, where, why = _lookup(name, scopes, line)
    if why:
        out.unresolved.append(f"{name} ({path.name}): {why}")
    elif bound is None:
        nested = [n for n in ast.walk(src.tree) if isinstance(n, _FUNC) and n.name == name]
        said = f" (defined {len(nested)} times inside other functions)" if nested else ""
        out.unresolved.append(f"{name} ({path.name}): not bound where the call sees it{said}")
    elif isinstance(bound, _FUNC):
        _append_def(bound, name, path, out)
    elif isinstance(bound, ast.ClassDef):
        out.unresolved.append(f"{name} ({path.name}:{bound.lineno}): a class")
    elif isinstance(bound, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        if isinstance(bound, ast.AugAssign) or bound.value is None:
            out.unresolved.append(f"{name} ({path.name}:{bound.lineno}): extended in place, not read")
        else:
            _resolve(bound.value, src, where, bound.lineno, out, depth + 1)
    elif isinstance(bound, (ast.Import, ast.ImportFrom)):
        _resolve_import(bound, name, path, out, depth)
    elif isinstance(bound, ast.arg):
        out.unresolved.append(f"{name} ({path.name}:{bound.lineno}): a parameter, its value is the caller's")
    elif isinstance(bound, ast.Expr):
        out.unresolved.append(f"{name} ({path.name}:{bound.lineno}): grown in place from a value not read")
    else:
        out.unresolved.append(
            f"{name} ({path.name}:{getattr(bound, 'lineno', '?')}): bound by an unpacking or a loop"
        )


def _append_def(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    name: str,
    path: Path,
    out: RewardReading,
    drop_first: bool = False,
) -> None:
    func = signature(name, f"{_shown(path)}:{node.lineno}", node.args)
    if drop_first and func.params:  # self / cls: bound by the instance or the class
        func.params = func.params[1:]
    func.returns_nothing = node.lineno if returns_nothing(node) else None
    func.forwards = forwarded_twice(node)
    func.renames = _renames(node, path, func.forwards)
    out.funcs.append(func)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    return next((n for n in cls.body if isinstance(n, _FUNC) and n.name == name), None)


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_call_name(d) == "staticmethod" for d in node.decorator_list)


def _instance(cls: ast.ClassDef, path: Path, out: RewardReading, label: str) -> None:
    """An instance of a class of the script: TRL calls its ``__call__`` (without ``self``)."""
    call = _method(cls, "__call__")
    if call is None:
        out.unresolved.append(f"{label}(...) ({path.name}:{cls.lineno}): {cls.name} defines no __call__ here")
        return
    _append_def(call, f"{cls.name}.__call__", path, out, drop_first=not _is_static(call))


def _resolve_attribute(
    expr: ast.Attribute, src: _Source, scopes: list[ast.AST], line: int, out: RewardReading, depth: int
) -> None:
    path = src.path
    base = expr.value
    if isinstance(base, ast.Name) and base.id in ("self", "cls"):
        owner = src.enclosing_class(scopes)
        method = _method(owner[0], expr.attr) if owner else None
        if owner is not None and method is not None:
            _append_def(method, f"{owner[0].name}.{expr.attr}", path, out, drop_first=not _is_static(method))
            return
        out.unresolved.append(f"{ast.unparse(expr)} ({path.name}:{expr.lineno}): not a method read here")
        return
    if isinstance(base, ast.Name):
        bound, where, _ = _lookup(base.id, scopes, line)
        value = getattr(bound, "value", None) if isinstance(bound, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):  # obj = Cls(...); obj.method
            cls, _, _ = _lookup(value.func.id, where, getattr(bound, "lineno", line))
            method = _method(cls, expr.attr) if isinstance(cls, ast.ClassDef) else None
            if isinstance(cls, ast.ClassDef) and method is not None:
                _append_def(method, f"{cls.name}.{expr.attr}", path, out, drop_first=not _is_static(method))
                return
        if isinstance(bound, ast.ClassDef):  # Cls.method: a static or class method
            method = _method(bound, expr.attr)
            if method is not None:
                cm = any(_call_name(d) == "classmethod" for d in method.decorator_list)
                _append_def(method, f"{bound.name}.{expr.attr}", path, out, drop_first=cm)
                return
        target = _imported_module(base.id, src.tree, path)
        if target is not None:
            _resolve_in_module(target, expr.attr, out, depth + 1)
            return
    out.unresolved.append(f"{ast.unparse(expr)} ({path.name}:{expr.lineno}): not a local module")


def _resolve_partial(
    expr: ast.Call, src: _Source, scopes: list[ast.AST], line: int, out: RewardReading, depth: int
) -> None:
    """``functools.partial(f, *args, **kw)``: f's parameters less those it binds (positionals
    fill the first ones; keywords are given, and stay keywords TRL may pass again)."""
    path = src.path
    if (
        not expr.args
        or any(isinstance(a, ast.Starred) for a in expr.args)
        or any(k.arg is None for k in expr.keywords)
    ):
        out.unresolved.append(
            f"{ast.unparse(expr)[:80]} ({path.name}:{expr.lineno}): a partial not read statically"
        )
        return
    inner = RewardReading()
    _resolve(expr.args[0], src, scopes, line, inner, depth + 1)
    out.unresolved += inner.unresolved
    bound = len(expr.args) - 1
    given = {k.arg for k in expr.keywords if k.arg}
    for func in inner.funcs:
        positional = [p for p in func.params if p.kind != "kwonly"]
        drop = {p.name for p in positional[:bound]}
        func.params = [
            Param(p.name, p.required and p.name not in given, p.positional_only, p.kind)
            for p in func.params
            if p.name not in drop
        ]
        func.name = f"partial({func.name})"
        out.funcs.append(func)


def _resolve_import(
    node: ast.Import | ast.ImportFrom, name: str, path: Path, out: RewardReading, depth: int
) -> None:
    if isinstance(node, ast.Import):
        out.unresolved.append(f"{name} ({path.name}:{node.lineno}): a module, not a function")
        return
    alias = next(a for a in node.names if (a.asname or a.name) == name)
    if node.module and node.module.split(".")[0] == "trl":
        known = registry_func(alias.name, None)
        if known is not None:
            out.funcs.append(known)
            return
    target = _from_module(node, path)
    if target is None or depth >= MAX_DEPTH:
        out.unresolved.append(f"{name} ({path.name}:{node.lineno}): from {node.module}, not a local file")
    else:
        _resolve_in_module(target, alias.name, out, depth + 1)


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


#: files as ``envdoctor fix`` edited them in memory (``Plan.edited``: normpath -> text), for the
#: reading under way (set by ``from_script``)
_EDITED: dict[str, str] = {}


def _text(path: Path) -> str | None:
    """The file's text as the run would read it: as a fix edited it in memory, else from disk."""
    edited = _EDITED.get(os.path.normpath(str(path)))
    if edited is not None:
        return edited
    try:
        if not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _parse(path: Path) -> ast.Module | None:
    try:
        text = _text(path)
        if text is None:
            return None
        return ast.parse(text, filename=str(path))
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
    params += [
        Param(a.arg, d is None, kind="kwonly")
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=False)
    ]
    kw = args.kwarg.arg if args.kwarg is not None else None
    return RewardFunc(name, where, params, var_keyword=kw is not None, kwarg_name=kw)


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


def forwarded_twice(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[tuple[str, str, int]]:
    """Calls in the body that get ``**kwargs`` (the function's own) and an explicit keyword the
    function does not take by name: TRL's keyword of that name lands in ``**kwargs`` and is given
    twice. Not judged where the body empties ``kwargs`` of it (``pop``, ``del``, a new value)."""
    kw = node.args.kwarg.arg if node.args.kwarg is not None else None
    if kw is None:
        return []
    named = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    body = node.body if isinstance(node.body, list) else [ast.Return(value=node.body)]
    todo: list[ast.AST] = list(body)
    calls: list[ast.Call] = []
    changed = False
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Call):
            calls.append(n)
            if isinstance(n.func, ast.Attribute) and ast.unparse(n.func.value) == kw:
                changed = True  # kwargs.pop(...), kwargs.update(...)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
            if any(kw in {x.id for x in ast.walk(t) if isinstance(x, ast.Name)} for t in targets):
                changed = True
        todo.extend(ast.iter_child_nodes(n))
    if changed:
        return []
    # only calls every run reaches: in the body's own simple statements (not under an if or a loop)
    simple = (ast.Return, ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)
    reached = {id(n) for stmt in body if isinstance(stmt, simple) for n in ast.walk(stmt)}
    out = []
    for call in calls:
        if id(call) not in reached:
            continue
        if not any(
            k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kw for k in call.keywords
        ):
            continue
        for k in call.keywords:
            if k.arg is not None and k.arg not in named:
                out.append((k.arg, ast.unparse(call.func)[:60], call.lineno))
    return sorted(out, key=lambda x: x[2])


def _renames(
    node: ast.FunctionDef | ast.AsyncFunctionDef, path: Path, forwards: list[tuple[str, str, int]]
) -> dict[str, tuple[str, list[tuple[int, tuple[str, ...], tuple[str, ...]]]]]:
    """For a function that hands keyword K on beside its **kwargs: the edit that names its first
    required parameter K (the one standing for it) and binds the old name to it in the body."""
    if not forwards or not node.body:
        return {}
    key = forwards[0][0]
    pos = [*node.args.posonlyargs, *node.args.args]
    required = pos[: len(pos) - len(node.args.defaults)]
    if not required or any(a.arg == key for a in pos + node.args.kwonlyargs):
        return {}
    arg = required[0]
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(node.body) > 1:
        first = node.body[1]  # after the docstring
    lines = (_text(path) or "").splitlines()
    if arg.lineno != arg.end_lineno or not 0 < arg.lineno <= len(lines) or first.lineno > len(lines):
        return {}
    text = lines[arg.lineno - 1]
    raw = text.encode("utf-8")
    new = (raw[: arg.col_offset] + key.encode() + raw[arg.end_col_offset or arg.col_offset :]).decode("utf-8")
    body = lines[first.lineno - 1]
    indent = body[: len(body) - len(body.lstrip())]
    if first.lineno == arg.lineno or not body.strip():
        return {}
    edits: list[tuple[int, tuple[str, ...], tuple[str, ...]]] = [
        (arg.lineno, (text,), (new,)),
        (first.lineno, (), (f"{indent}{arg.arg} = {key}",)),
    ]
    return {arg.arg: (key, edits)}


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


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
    src = _Source(tree, path)
    _resolve_name(attr, src, [tree], 10**9, out, depth)
