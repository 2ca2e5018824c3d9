#!/usr/bin/env python3
"""Derive, per TRL release and trainer class, whether ``from trl import <Trainer>`` and the
trainer's own code ever import vLLM (maintainer command; nothing installed, nothing imported).

For each release tag (the newest patch of each minor from 0.14) of a TRL git clone it reads
``trl/**/*.py`` with ``ast`` and follows, from ``trl``, ``trl.trainer`` and the module that defines
the trainer class, every TRL module imported as a module loads: module level, inside if / try /
with blocks (a guard may hold: an over-approximation), not ``if TYPE_CHECKING:``; and the module's
own functions it calls at load (trl/_compat.py's ``_patch_vllm_…()``). A lazy package's name
(``from trl.trainer import DPOTrainer``) is followed to the submodule that defines it. Every
``import vllm…`` / ``from vllm… import`` met is recorded with the vLLM releases TRL's own version
test lets it run for (``_is_package_version_below("vllm", "0.11.1")``: ``<0.11.1``), and so is
every vLLM import in the trainer module's own functions (at call). PKG004 reads the result
(rules/knowledge/trl_trainer_vllm.yaml): a run whose trainer loads no vLLM import for the
installed vLLM never loads vLLM's compiled ops, so vLLM's own torch pin cannot stop it.

Usage:
    python scripts/derive_trainer_vllm_imports.py --git /path/to/trl/.git            # write
    python scripts/derive_trainer_vllm_imports.py --git /path/to/trl/.git --check    # exit 1 on change
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "trl_trainer_vllm.yaml"
#: the trainers judged: TRL's trainers a run builds instead of GRPOTrainer (GRPO's own import of
#: vLLM is requirement_floors.yaml ``at_import``)
TRAINERS = ("DPOTrainer", "SFTTrainer", "KTOTrainer", "ORPOTrainer", "CPOTrainer", "RewardTrainer")
#: the first tag read (GRPOTrainer's release) and the patch releases skipped (a minor's first)
FIRST = Version("0.14.0")


def _git(git_dir: str, *args: str, data: str | None = None) -> str:
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        input=data,
        capture_output=True,
        check=True,
        text=True,
        errors="replace",
    )
    return out.stdout


def tags(git_dir: str) -> list[str]:
    """The release tags from FIRST on, the newest patch of each minor (vX.Y.Z, no rc)."""
    best: dict[tuple[int, int], Version] = {}
    for t in _git(git_dir, "tag").split():
        try:
            v = Version(t.removeprefix("v"))
        except InvalidVersion:
            continue
        if v < FIRST or v.is_prerelease or v.is_devrelease:
            continue
        key = (v.major, v.minor)
        best[key] = max(best.get(key, v), v)
    return [f"v{v}" for v in sorted(best.values())]


def files(git_dir: str, tag: str) -> dict[str, str]:
    """``path -> source`` of every ``trl/**/*.py`` at ``tag`` (one ``git cat-file --batch``)."""
    names = [
        n for n in _git(git_dir, "ls-tree", "-r", "--name-only", tag, "trl/").split("\n") if n.endswith(".py")
    ]
    raw = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
        input="".join(f"{tag}:{n}\n" for n in names).encode(),
        capture_output=True,
        check=True,
    ).stdout
    out: dict[str, str] = {}
    at = 0
    for name in names:
        end = raw.index(b"\n", at)
        size = int(raw[at:end].split()[2])
        out[name] = raw[end + 1 : end + 1 + size].decode("utf-8", "replace")
        at = end + 1 + size + 1
    return out


def _module(path: str) -> tuple[str, bool]:
    base = path[: -len(".py")]
    if base.endswith("/__init__"):
        return base[: -len("/__init__")].replace("/", "."), True
    return base.replace("/", "."), False


def _resolve(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    parts = module.split(".")
    keep = len(parts) - level + (1 if is_pkg else 0)
    base = ".".join(parts[: max(keep, 0)])
    return f"{base}.{name}" if name else base


def _defines(tree: ast.Module, name: str) -> bool:
    return any(
        (isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets))
        for n in tree.body
    )


#: TRL's own version tests of an installed package (trl/_compat.py): the vLLM releases they hold for
_VERSION_TESTS = {"_is_package_version_below": "<", "_is_package_version_at_least": ">="}


def _vllm_condition(test: ast.expr) -> str:
    """The vLLM versions for which ``test`` can hold (``"<0.11.1"``), "" for any: only TRL's own
    version tests of vLLM narrow it (an ``and`` of them); every other test may hold."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    out = []
    for t in parts:
        if isinstance(t, ast.Call) and getattr(t.func, "id", "") in _VERSION_TESTS and len(t.args) == 2:
            pkg, ver = (a.value if isinstance(a, ast.Constant) else None for a in t.args)
            if pkg == "vllm" and isinstance(ver, str):
                out.append(_VERSION_TESTS[t.func.id] + ver)  # type: ignore[attr-defined]
    return ",".join(out)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _load_time(
    body: list[ast.stmt], funcs: dict[str, ast.FunctionDef], cond: str, seen: set[str]
) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """``(import statement, vLLM condition)`` that run when a module loads: module-level statements,
    inside if / try / with blocks (not ``if TYPE_CHECKING:``), and the bodies of the module's own
    functions it calls at module level (trl/_compat.py's ``_patch_vllm_…()``)."""
    for st in body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            yield st, cond
        elif isinstance(st, ast.If):
            if _type_checking(st.test):
                yield from _load_time(st.orelse, funcs, cond, seen)
                continue
            inner = ",".join(c for c in (cond, _vllm_condition(st.test)) if c)
            yield from _load_time(st.body, funcs, inner, seen)
            yield from _load_time(st.orelse, funcs, cond, seen)
        elif isinstance(st, ast.Try):
            for block in (st.body, *(h.body for h in st.handlers), st.orelse, st.finalbody):
                yield from _load_time(block, funcs, cond, seen)
        elif isinstance(st, ast.With):
            yield from _load_time(st.body, funcs, cond, seen)
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            name = getattr(st.value.func, "id", "")
            if name in funcs and name not in seen:
                seen.add(name)
                yield from _load_time(funcs[name].body, funcs, cond, seen)


def closure(sources: dict[str, str], trainer: str) -> tuple[list[str], list[dict[str, str]]] | None:
    """(the TRL modules ``from trl import <trainer>`` loads, the vLLM imports among them) for
    ``trainer``; None where the release has no such class. Each import: ``at`` ("module:
    statement"), ``vllm`` (the vLLM versions it runs for, "" any), ``when`` ("import": as the
    modules load; "call": inside the trainer module's own functions, as the trainer runs)."""
    trees: dict[str, tuple[ast.Module, bool]] = {}
    for path, text in sources.items():
        try:
            trees[_module(path)[0]] = (ast.parse(text), path.endswith("/__init__.py"))
        except SyntaxError:
            continue
    home = sorted(
        (
            m
            for m, (t, _) in trees.items()
            if any(isinstance(n, ast.ClassDef) and n.name == trainer for n in t.body)
        ),
        key=lambda m: (".experimental." in f".{m}.", m),
    )
    if not home:
        return None
    queue, seen = ["trl", "trl.trainer", home[0]], set()
    found: list[dict[str, str]] = []

    def add(module: str) -> None:
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            m = ".".join(parts[:i])
            if m in trees and m not in seen and m not in queue:
                queue.append(m)

    def said(module: str, n: ast.stmt, src: str) -> str:
        if isinstance(n, ast.Import):
            return f"{module}: import {', '.join(a.name for a in n.names)}"
        return f"{module}: from {src} import {', '.join(a.name for a in n.names)}"  # type: ignore[attr-defined]

    while queue:
        module = queue.pop(0)
        seen.add(module)
        tree, is_pkg = trees[module]
        funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        stmts = [(n, c, "import") for n, c in _load_time(tree.body, funcs, "", set())]
        if module == home[0]:  # the trainer's own methods run too (imports at call time)
            stmts += [
                (n, "", "call")
                for f in ast.walk(tree)
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                for n in ast.walk(f)
                if isinstance(n, (ast.Import, ast.ImportFrom))
            ]
        for n, cond, when in stmts:
            srcs = (
                [a.name for a in n.names]
                if isinstance(n, ast.Import)
                else [_resolve(module, is_pkg, n.level, n.module)]
            )
            for src in srcs:
                top = src.split(".")[0]
                if top == "vllm":
                    row = {"at": said(module, n, src), "vllm": cond, "when": when}
                    if row not in found:
                        found.append(row)
                if top != "trl":
                    continue
                add(src)
                for a in n.names if isinstance(n, ast.ImportFrom) else ():
                    if f"{src}.{a.name}" in trees:
                        add(f"{src}.{a.name}")
                    elif src in trees and trees[src][1] and not _defines(trees[src][0], a.name):
                        for m, (t, _) in sorted(trees.items()):  # a lazy package: the submodule
                            if m.rsplit(".", 1)[0] == src and _defines(t, a.name):
                                add(m)
                                break
    return sorted(seen), found


def derive(git_dir: str) -> dict[str, dict[str, list[dict[str, str]]]]:
    out: dict[str, dict[str, list[dict[str, str]]]] = {t: {} for t in TRAINERS}
    for tag in tags(git_dir):
        sources = files(git_dir, tag)
        for trainer in TRAINERS:
            found = closure(sources, trainer)
            if found is not None:
                out[trainer][tag.removeprefix("v")] = found[1]
    return out


def render(doc: dict[str, dict[str, list[dict[str, str]]]]) -> str:
    import yaml

    head = (
        "# Generated by scripts/derive_trainer_vllm_imports.py -- edit the script, not this file.\n"
        "# Per TRL trainer class (one a run builds instead of GRPOTrainer) and release read at its tag:\n"
        "# the vLLM imports among the TRL modules `from trl import <Trainer>` loads (module level, in\n"
        "# if / try blocks but `if TYPE_CHECKING:`, in module functions called at load: when: import)\n"
        "# and in the trainer module's own functions (when: call); vllm: the vLLM releases for which\n"
        '# TRL\'s own version test lets it run ("": any). []: none, so a run of that trainer never\n'
        "# loads vLLM (PKG004: vLLM's torch pin cannot stop it).\n"
    )
    body = {
        "schema": "envdoctor.knowledge/1",
        "generated_by": "scripts/derive_trainer_vllm_imports.py",
        "trainers": doc,
        "references": [
            "https://github.com/huggingface/trl/blob/v0.29.0/trl/trainer/dpo_trainer.py",
            "https://github.com/huggingface/trl/blob/v0.29.0/trl/trainer/sft_trainer.py",
            "https://github.com/huggingface/trl/blob/v0.29.0/trl/generation/vllm_client.py",
            "https://github.com/huggingface/trl/blob/v0.14.0/trl/trainer/grpo_trainer.py",
            "https://github.com/huggingface/trl/blob/v1.9.0/trl/__init__.py",
        ],
    }
    return head + str(yaml.safe_dump(body, sort_keys=False, width=100))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--git", required=True, help="a TRL git directory (its release tags are read)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file would change")
    args = ap.parse_args(argv)
    new = render(derive(args.git))
    old = OUT.read_text() if OUT.is_file() else None
    if args.check:
        print("unchanged" if old == new else f"{OUT} would change")
        return 0 if old == new else 1
    if old != new:
        OUT.write_text(new)
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
