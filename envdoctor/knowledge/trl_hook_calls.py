"""How TRL's trainers call their own methods on ``self``, per release (rules/knowledge/
trl_hook_calls.json, derived from TRL's releases by scripts/derive_trl_hook_calls.py): a training
script's subclass that overrides such a method (``_generate_and_score_completions``,
``_prepare_inputs``, ``_get_per_token_logps``…) gets the call with the arguments the TRL that runs
passes. Read lazily, only when a script read overrides a method of a TRL trainer."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor.knowledge.signature_history import Signature
from envdoctor.resources import rules_dir

SCHEMA = "envdoctor.trl_hook_calls/1"
FILE = "trl_hook_calls.json"


def signature_text(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A ``def``'s parameters as rules/knowledge/signatures/ writes them (``Signature``), without
    the bound first one (``self``/``cls``, whatever its name, but for a ``@staticmethod``):
    ``inputs,mode``, ``inputs,*args,**``."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    out: list[str] = []
    for i, (p, d) in enumerate(zip(positional, defaults, strict=True)):
        if i == 0 and not static:
            continue
        out.append(p.arg + ("=" if d else ""))
        if a.posonlyargs and i == len(a.posonlyargs) - 1:
            out.append("/")
    if a.vararg is not None:
        out.append("*" + a.vararg.arg)
    elif a.kwonlyargs:
        out.append("*")
    for p, kd in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(p.arg + ("=" if kd is not None else ""))
    if a.kwarg is not None:
        out.append("**")
    return ",".join(out)


def call_shape(call: ast.Call) -> str | None:
    """A call's shape as the table writes it (``self.m(a, b, k=c)``: ``"2;k"``); None where it
    spreads (``*args``, ``**kwargs``: its shape is not known)."""
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        return None
    return f"{len(call.args)};{','.join(sorted(k.arg for k in call.keywords if k.arg))}"


def self_calls(cls: ast.ClassDef) -> tuple[tuple[str, str], ...]:
    """The calls a class's methods make of its other methods on ``self`` (``_prepare_inputs``
    calling ``self._generate_and_score_completions(x, mode)``): (method, shape), each once; spread
    calls and a method's calls of its own name left out."""
    out: dict[tuple[str, str], None] = {}
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
                and node.func.attr != fn.name
                and (shape := call_shape(node)) is not None
            ):
                out[(node.func.attr, shape)] = None
    return tuple(out)


def binds(signature: str, shape: str) -> bool:
    """Whether a call of ``shape`` (``"2;k,l"``: two arguments by position, keywords k and l)
    binds to a method of ``signature`` (Python's own rules, the bound first argument aside)."""
    count_text, _, kw_text = shape.partition(";")
    count, keywords = int(count_text), [k for k in kw_text.split(",") if k]
    params = Signature(signature).params()
    positional = [(n, k, r) for n, k, r in params if k in ("pos", "any")]
    star = any(k == "*" for _, k, _ in params)
    double = any(k == "**" for _, k, _ in params)
    if count > len(positional) and not star:
        return False
    filled = {n for n, _, _ in positional[:count]}
    for key in keywords:
        if key in filled:
            return False  # got multiple values
        if any(n == key and k in ("any", "kw") for n, k, _ in params):
            filled.add(key)
        elif not double:
            return False
    return all(n in filled for n, k, r in params if r and k in ("pos", "any", "kw"))


def shape_text(shape: str) -> str:
    """``"2;k"`` as a reader says it: ``2 arguments by position and k=``."""
    count_text, _, kw_text = shape.partition(";")
    n = int(count_text)
    said = "no argument" if n == 0 else f"{n} argument{'s' if n != 1 else ''} by position"
    keys = [k for k in kw_text.split(",") if k]
    return said + (" and " + ", ".join(f"{k}=" for k in keys) if keys else "")


@lru_cache(maxsize=1)
def table() -> dict[str, Any] | None:
    try:
        doc = json.loads((rules_dir() / "knowledge" / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == SCHEMA else None


def _indices(spans: str) -> set[int]:
    out: set[int] = set()
    for part in spans.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit():
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


@dataclass(frozen=True)
class Verdict:
    """An override judged against the TRL release that runs."""

    release: str
    shapes: tuple[str, ...]  # the calls TRL makes there that the override does not take
    all_fail: bool  # no call TRL makes of it there binds: every call raises TypeError
    defs: str | None  # TRL's own parameter list of the method there
    fits: tuple[str, ...]  # the releases whose every call binds the override


def judge(cls: str, method: str, signature: str, release: str) -> Verdict | None:
    """The verdict for ``cls.method`` overridden with ``signature`` under TRL ``release``; None
    where it binds every call, where TRL's ``cls`` does not call ``method`` on itself there, or
    where the release is not in the table (not judged)."""
    doc = table()
    if doc is None:
        return None
    releases = [str(r) for r in doc.get("releases") or []]
    row = ((doc.get("classes") or {}).get(cls) or {}).get(method)
    if release not in releases or not row:
        return None
    here = releases.index(release)
    calls = [(str(s), _indices(str(sp))) for s, sp in row.get("calls") or []]
    now = [s for s, ix in calls if here in ix]
    if not now:
        return None
    failing = tuple(s for s in now if not binds(signature, s))
    if not failing:
        return None
    defs = next((str(s) for s, sp in row.get("defs") or [] if here in _indices(str(sp))), None)
    fits = tuple(
        r
        for i, r in enumerate(releases)
        if any(i in ix for _, ix in calls) and all(binds(signature, s) for s, ix in calls if i in ix)
    )
    return Verdict(release, failing, len(failing) == len(now), defs, fits)


def spans_text(fits: tuple[str, ...]) -> str:
    """Releases as ranges of the table's order: ``0.14.0–0.29.1, 1.2.0``."""
    doc = table() or {}
    releases = [str(r) for r in doc.get("releases") or []]
    runs: list[list[str]] = []
    last = -2
    for r in fits:
        i = releases.index(r)
        if i == last + 1 and runs:
            runs[-1][1] = r
        else:
            runs.append([r, r])
        last = i
    return ", ".join(a if a == b else f"{a}–{b}" for a, b in runs)
