#!/usr/bin/env python3
"""Derive how TRL's trainers call their own methods on ``self`` (maintainer command).

A training script that subclasses a TRL trainer (``class MyTrainer(GRPOTrainer)``) and overrides a
method the trainer calls on ``self`` (``_generate_and_score_completions``, ``_prepare_inputs``,
``_get_per_token_logps``, ``_compute_loss``…) gets that call with the arguments the TRL release
that runs passes: an override written for another release raises ``TypeError`` at the call
("missing 1 required positional argument: 'mode'", "takes 2 positional arguments but 3 were
given"). This command records, per release, the call shapes each trainer class of
``trl/trainer/*_trainer.py`` makes of its own methods (``self.m(a, b, k=c)``: 2 positional, the
keyword ``k``), and each method's own parameter list (the signature to write in a fix).

Releases are read with ``ast`` only (nothing imported): the git tags ``vX.Y.Z`` of a TRL clone
(``--git``) and the wheels of a folder (``--wheels``, for releases newer than the clone's tags); a
release in both is read from its wheel.

It writes ``rules/knowledge/trl_hook_calls.json`` (schema ``envdoctor.trl_hook_calls/1``)::

    {"schema": …, "source": …, "releases": ["0.14.0", …],        # oldest first
     "classes": {"GRPOTrainer": {"_prepare_inputs": {
         "defs": [["inputs", "0-3"], ["generation_batch", "5-40"]],   # as signature_history writes
         "calls": [["1;", "0-40"]]}}}}                                # positional count ; keywords

A call that spreads (``*args``, ``**kwargs``) is not recorded (its shape is not known).

Usage::

    python scripts/derive_trl_hook_calls.py --git /path/to/trl/.git --wheels /tmp/trl-wheels
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

from packaging.version import Version

SCHEMA = "envdoctor.trl_hook_calls/1"
SINCE = Version("0.14.0")  # GRPOTrainer's first release
OUT = Path(__file__).resolve().parent.parent / "rules" / "knowledge" / "trl_hook_calls.json"
TRAINER_FILE = re.compile(r"^trl/trainer/\w+_trainer\.py$")

sys.path.insert(0, str(OUT.parent.parent.parent))
# the shapes and parameter lists as envdoctor reads a script's overrides (one writing of both)
from envdoctor.knowledge.trl_hook_calls import call_shape, signature_text  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/gitread.py
from gitread import git as _git  # noqa: E402


def _classes(text: str) -> dict[str, dict[str, dict[str, set[str]]]]:
    """Trainer class -> method -> {"defs": {signature}, "calls": {shape}}."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    out: dict[str, dict[str, dict[str, set[str]]]] = {}
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name.endswith("Trainer")):
            continue
        methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        rows: dict[str, dict[str, set[str]]] = {}
        for node in ast.walk(cls):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
                and node.func.attr in methods
            ):
                continue
            shape = call_shape(node)
            name = node.func.attr
            row = rows.setdefault(name, {"defs": {signature_text(methods[name])}, "calls": set()})
            if shape is not None:
                row["calls"].add(shape)
        if rows:
            out[cls.name] = rows
    return out


def _spans(indices: list[int]) -> str:
    parts: list[str] = []
    for i in sorted(indices):
        if parts and int(parts[-1].split("-")[-1]) == i - 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{i}"
        else:
            parts.append(str(i))
    return ",".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--git", type=Path, help="a TRL clone's git directory (tags vX.Y.Z)")
    ap.add_argument("--wheels", type=Path, help="a folder of trl-X.Y.Z-py3-none-any.whl")
    ap.add_argument("--out", type=Path, default=OUT)
    ns = ap.parse_args()
    sources: dict[Version, tuple[str, str]] = {}
    if ns.git:
        for tag in _git(ns.git, "tag").split():
            m = re.fullmatch(r"v(\d+\.\d+\.\d+)", tag)
            if m and Version(m.group(1)) >= SINCE:
                sources[Version(m.group(1))] = ("git", tag)
    if ns.wheels:
        for whl in ns.wheels.glob("trl-*-py3-none-any.whl"):
            v = Version(whl.name.split("-")[1])
            if v >= SINCE and not v.is_prerelease:
                sources[v] = ("wheel", str(whl))
    releases = sorted(sources)
    table: dict[str, dict[str, dict[str, dict[str, list[int]]]]] = {}
    for index, version in enumerate(releases):
        how, where = sources[version]
        if how == "git":
            names = _git(ns.git, "ls-tree", "-r", "--name-only", where, "trl/trainer").split()
            texts = [_git(ns.git, "show", f"{where}:{n}") for n in names if TRAINER_FILE.match(n)]
        else:
            with zipfile.ZipFile(where) as z:
                texts = [z.read(n).decode("utf-8", "replace") for n in z.namelist() if TRAINER_FILE.match(n)]
        for text in texts:
            for cls, methods in _classes(text).items():
                for method, row in methods.items():
                    entry = table.setdefault(cls, {}).setdefault(method, {"defs": {}, "calls": {}})
                    for part in ("defs", "calls"):
                        for value in row[part]:
                            entry[part].setdefault(value, []).append(index)
    doc = {
        "schema": SCHEMA,
        "source": "huggingface/trl: trl/trainer/*_trainer.py, read with ast (git tags, then wheels)",
        "releases": [str(v) for v in releases],
        "classes": {
            cls: {
                method: {
                    part: [[v, _spans(ix)] for v, ix in entry[part].items()] for part in ("defs", "calls")
                }
                for method, entry in sorted(methods.items())
            }
            for cls, methods in sorted(table.items())
        },
    }
    ns.out.write_text(json.dumps(doc, indent=None, separators=(",", ":"), sort_keys=False) + "\n")
    print(f"{ns.out}: {len(releases)} releases, {sum(len(m) for m in table.values())} methods")


if __name__ == "__main__":
    main()
