"""What the training code does around its trainer that CFG012 and PKG015 judge, read from the
syntax tree of the files ``plan.script.files`` names (the script and the repository modules it
imports; never run):

- ``peft``: the trainer gets a PEFT adapter: ``GRPOTrainer(..., peft_config=X)`` with X not
  ``None``, or ``get_peft_model(...)`` on the model it hands over;
- ``input_grads``: the code makes the inputs require grad itself (``enable_input_require_grads``,
  ``prepare_model_for_kbit_training``, or ``gradient_checkpointing_enable`` before the adapter,
  after which PEFT enables them);
- ``resume``: ``trainer.train(resume_from_checkpoint=X)`` (or X as the first argument).

Each fact says how sure it is: ``always`` (a literal, a config call), ``config:KEY`` (the value
is GRPO config ``KEY``: ``training_args.resume_from_checkpoint``, TRL's ``get_peft_config``
reading ``use_peft``) or ``maybe`` (a name bound to a condition, a computed value:
``get_last_checkpoint(...)``). Read on demand, only where a rule's versions already match: the
static check of any other stack never parses the files again.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Any

#: the files read for one script, in all (the reader's own bound on what it follows)
MAX_BYTES = 1024 * 1024
#: calls that make the inputs of a frozen base require grad (PEFT's hook on the embeddings)
INPUT_GRAD_CALLS = frozenset(
    {"enable_input_require_grads", "prepare_model_for_kbit_training", "gradient_checkpointing_enable"}
)
#: calls that wrap the model in a PEFT adapter
PEFT_WRAPS = frozenset({"get_peft_model"})
#: TRL's helper that turns ModelConfig into a PEFT config, None unless ``use_peft``
PEFT_FROM_CONFIG = "get_peft_config"


@dataclass(frozen=True)
class Fact:
    """One fact of the code: how sure (``always``, ``config:KEY``, ``maybe``), where, and the
    expression as written (``peft_config=lora``)."""

    how: str
    where: str
    text: str


@dataclass(frozen=True)
class TrainCalls:
    peft: Fact | None = None
    input_grads: str | None = None  # where the code makes the inputs require grad itself
    resume: Fact | None = None


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _bindings(tree: ast.AST) -> dict[str, list[ast.expr]]:
    """Every value a simple name is assigned in the file (any scope: a name the code binds in
    two functions counts both)."""
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            if isinstance(node.target, ast.Name):
                out.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                out.setdefault(a.arg, []).append(ast.Name(id="<parameter>"))
    return out


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _peft_how(node: ast.expr, names: dict[str, list[ast.expr]], depth: int = 0) -> str | None:
    """How sure ``peft_config=node`` hands a config (None: it hands None)."""
    if _none(node):
        return None
    if isinstance(node, ast.Call):
        return "config:use_peft" if _name(node.func) == PEFT_FROM_CONFIG else "always"
    if isinstance(node, ast.Name) and depth < 3 and names.get(node.id):
        hows = {_peft_how(v, names, depth + 1) for v in names[node.id]}
        if hows == {None}:
            return None
        if len(hows) == 1:
            return hows.pop()
    return "maybe"


def _resume_how(node: ast.expr, names: dict[str, list[ast.expr]], depth: int = 0) -> str | None:
    """How sure ``resume_from_checkpoint=node`` resumes (None: never; Trainer takes False as
    None)."""
    if isinstance(node, ast.Constant):
        return "always" if node.value not in (None, False, "") else None
    if isinstance(node, (ast.JoinedStr, ast.BinOp)) and not any(
        isinstance(n, ast.Name) for n in ast.walk(node)
    ):
        return "always"
    if isinstance(node, ast.Attribute) and node.attr == "resume_from_checkpoint":
        return "config:resume_from_checkpoint"
    if isinstance(node, ast.Name) and depth < 3 and names.get(node.id):
        hows = {_resume_how(v, names, depth + 1) for v in names[node.id]}
        if hows == {None}:
            return None
        if len(hows) == 1:
            return hows.pop()
    return "maybe"


def _text(node: ast.AST, text: str) -> str:
    seg = ast.get_source_segment(text, node) or ""
    seg = " ".join(seg.split())
    return seg if len(seg) <= 80 else seg[:77] + "..."


def _trainers(tree: ast.AST) -> set[str]:
    """Names bound to a ``…Trainer(...)`` call (``trainer = GRPOTrainer(...)``)."""
    out = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _name(node.value.func).endswith("Trainer")
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.add(target.id)
                elif isinstance(target, ast.Attribute):
                    out.add(target.attr)
    return out


def _scan(path: str, text: str, found: dict[str, Any]) -> None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # not Python text, or nested past the parser's depth: nothing read
    names = _bindings(tree)
    trainers = _trainers(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        where = f"{path}:{node.lineno}"
        if name in INPUT_GRAD_CALLS:
            found.setdefault("input_grads", f"{name}(...) in {where}")
        elif name in PEFT_WRAPS:
            found.setdefault("wrap", Fact("maybe", where, f"{name}(...)"))
        elif name.endswith("GRPOTrainer") or any(kw.arg == "peft_config" for kw in node.keywords):
            # TRL's GRPOTrainer, or a trainer the script builds through another name (``trainer_cls(
            # …, peft_config=get_peft_config(model_args))`` of a vendored GRPO trainer): the
            # adapter it is handed is the one its own get_peft_model wraps the model in
            for kw in node.keywords:
                if kw.arg == "peft_config":
                    how = _peft_how(kw.value, names)
                    if how is not None:
                        fact = Fact(how, where, f"peft_config={_text(kw.value, text)}")
                        if "peft" not in found or found["peft"].how == "maybe":
                            found["peft"] = fact
        elif name == "train" and isinstance(node.func, ast.Attribute):
            owner = _name(node.func.value)
            arg = next((k.value for k in node.keywords if k.arg == "resume_from_checkpoint"), None)
            if arg is None and node.args and owner in trainers:
                arg = node.args[0]
            if arg is None:
                continue
            how = _resume_how(arg, names)
            if how is not None and ("resume" not in found or found["resume"].how == "maybe"):
                found["resume"] = Fact(
                    how, where, f"{owner}.train(resume_from_checkpoint={_text(arg, text)})"
                )


def read_train_calls(files: tuple[str, ...], edited: dict[str, str] | None = None) -> TrainCalls:
    """The facts of ``files`` (paths as the plan gives them; ``edited``: normalised path -> the
    text ``envdoctor fix`` edited in memory). Unreadable files add nothing."""
    found: dict[str, Any] = {}
    budget = MAX_BYTES
    for path in files:
        text = (edited or {}).get(os.path.normpath(path))
        if text is None:
            try:
                with open(path, "rb") as fh:
                    raw = fh.read(budget + 1)
            except OSError:
                continue
            if len(raw) > budget:
                break
            text = raw.decode("utf-8", errors="replace")
        budget -= len(text)
        if budget < 0:
            break
        _scan(path, text, found)
    peft = found.get("peft") or found.get("wrap")
    return TrainCalls(peft=peft, input_grads=found.get("input_grads"), resume=found.get("resume"))


def train_calls(plan: Any) -> TrainCalls | None:
    """The facts of the training script the plan read (cached on the plan), None where no
    script was read."""
    script = plan.script
    if script is None or script.problem or not script.files:
        return None
    edited = getattr(plan, "edited", None) or {}
    key = (tuple(script.files), tuple(sorted((k, hash(v)) for k, v in edited.items())))
    memo: dict[Any, TrainCalls] = plan.__dict__.setdefault("_train_calls", {})
    if key not in memo:
        memo[key] = read_train_calls(key[0], edited)
    return memo[key]
