#!/usr/bin/env python3
"""Derive the values TRL accepts for GRPOConfig's string-choice keys, per release
(rules/knowledge/grpo_config_choices.yaml), from TRL's source at its release tags.

Maintainer script; not run in CI. A sibling of scripts/derive_grpo_config_keys.py (same inputs: a
clone or bare mirror of https://github.com/huggingface/trl, read with ``git show TAG:path`` at every
``vX.Y.Z`` >= v0.14.0, and ``--wheel-dir`` for releases newer than the newest tag). Nothing from
TRL is imported or executed: ``trl/trainer/grpo_config.py`` (with ``base_config.py``) and
``trl/trainer/grpo_trainer.py`` are parsed with ``ast``.

A key is a string-choice key when the source compares ``self.<key>``, ``args.<key>`` or
``self.args.<key>`` with string literals (``==``, ``!=``, ``in``, ``not in``) and the key is a
GRPOConfig field with a string default. For each such key and release it records:

- ``accepted``: the values TRL takes; where the source refuses the others, the values of the check
  that refuses them; else every literal the source compares the key with (``known``).
- ``refused_at``: where another value fails:
  ``config_init``  -- ``if self.<key> not in (...): raise`` in GRPOConfig.__post_init__ (or an
                      if/elif chain over the key whose last ``else`` raises there);
  ``trainer_init`` -- such a chain in GRPOTrainer.__init__;
  ``first_step``   -- such a chain in another GRPOTrainer method (the loss, the advantages): the
                      run loads the model and fails when that method first runs;
  ``silent``       -- no check raises: another value falls through to a default branch.
- ``where``: the file and function of the refusal.

Usage:
    python scripts/derive_grpo_config_choices.py /path/to/trl.git --wheel-dir DIR \
        > rules/knowledge/grpo_config_choices.yaml
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import zipfile

import yaml
from packaging.version import Version

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from derive_grpo_config_keys import (  # noqa: E402
    BASE_PATHS,
    GRPO_PATH,
    _Dumper,
    fields_at,
    git_show,
    release_tags,
)

GENERATED = "scripts/derive_grpo_config_choices.py"
TRAINER_PATH = "trl/trainer/grpo_trainer.py"
PATHS = (GRPO_PATH, *BASE_PATHS, TRAINER_PATH)
STAGES = ("config_init", "trainer_init", "first_step")
#: Curated: values users write that TRL does not take, and the keys that mean them in TRL (each
#: checked against the reference). ``since``: the first release with every key set.
ALIASES = {
    "loss_type": {
        "gspo": {
            "set": {"importance_sampling_level": "sequence", "loss_type": "grpo"},
            "since": "0.20.0",
            "note": "GSPO (Group Sequence Policy Optimization) is GRPO with sequence-level importance "
            "sampling; TRL has no gspo loss",
            "references": [
                "https://huggingface.co/docs/trl/main/en/paper_index#group-sequence-policy-optimization",
                "https://github.com/huggingface/trl/blob/v0.20.0/docs/source/paper_index.md",
            ],
        },
    },
    "scale_rewards": {
        # the bool this key was before 0.22, written on a command line: TRL's parser keeps the text
        **{
            text: {
                "set": {"scale_rewards": means},
                "since": "0.22.0",
                "note": f"a command line's {text} reaches this str field as text; the boolean "
                f"{text.capitalize()} (a config file's, or code's) is what TRL maps to {means}",
                "references": [
                    "https://github.com/huggingface/trl/blob/v0.22.0/trl/trainer/grpo_config.py",
                    "https://github.com/huggingface/trl/pull/3992",
                ],
            }
            for text, means in (("false", "none"), ("true", "group"))
        },
    },
}
#: attribute owners that hold the config: self.<key> (config, or the trainer's copy), args.<key>,
#: self.args.<key>, config.<key>
OWNERS = ("self", "args", "config", "self.args")


def _key_of(node: ast.AST, keys: set[str]) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr in keys and ast.unparse(node.value) in OWNERS:
        return node.attr
    return None


def _strings(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        vals = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return vals if len(vals) == len(node.elts) else None
    return None


def _compare(test: ast.AST, keys: set[str]) -> tuple[str, str, list[str]] | None:
    """``self.K == "x"`` / ``self.K in [...]`` / ``not in`` / ``!=``: (key, op, values)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    key = _key_of(test.left, keys)
    vals = _strings(test.comparators[0])
    if key is None or vals is None:
        return None
    op = {ast.Eq: "in", ast.In: "in", ast.NotEq: "not in", ast.NotIn: "not in"}.get(type(test.ops[0]))
    return (key, op, vals) if op else None


def _raises(body: list[ast.stmt]) -> bool:
    return any(isinstance(s, ast.Raise) for s in body)


class _Reader(ast.NodeVisitor):
    def __init__(self, keys: set[str], path: str) -> None:
        self.keys, self.path = keys, path
        self.func: list[str] = []
        self.conds: list[list[str]] = [[]]  # per function: the tests of the ifs around the node
        self.compared: dict[str, set[str]] = {}
        self.refusals: dict[str, list[dict]] = {}
        self._seen_if: set[int] = set()

    def _stage(self) -> str:
        func = self.func[-1] if self.func else ""
        if self.path != TRAINER_PATH:
            return "config_init"
        return "trainer_init" if func == "__init__" else "first_step"

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.func.append(node.name)
        self.conds.append([])
        self.generic_visit(node)
        self.conds.pop()
        self.func.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Compare(self, node: ast.Compare) -> None:
        got = _compare(node, self.keys)
        if got:
            self.compared.setdefault(got[0], set()).update(got[2])
        self.generic_visit(node)

    def visit_If(self, node: ast.If) -> None:
        chained = id(node) in self._seen_if
        if not chained:
            self._chain(node)
        self.visit(node.test)
        test = ast.unparse(node.test)
        if not chained:
            self.conds[-1].append(test)
        for stmt in node.body:
            self.visit(stmt)
        if not chained:
            self.conds[-1][-1] = f"not ({test})"
        for stmt in node.orelse:
            self.visit(stmt)
        if not chained:
            self.conds[-1].pop()

    def _chain(self, node: ast.If) -> None:
        got = _compare(node.test, self.keys)
        if got is None:
            return
        key, op, vals = got
        where = f"{self.path} {self.func[-1] if self.func else '<module>'}"
        if op == "not in":  # if self.K not in (...): raise
            if _raises(node.body):
                self._refuse(key, vals, where, node.lineno)
            return
        accepted = list(vals)
        cur = node
        while len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If):
            nxt = cur.orelse[0]
            more = _compare(nxt.test, self.keys)
            if more is None or more[0] != key or more[1] != "in":
                return
            self._seen_if.add(id(nxt))
            accepted += more[2]
            cur = nxt
        if cur.orelse and _raises(cur.orelse) and cur is not node:
            self._refuse(key, accepted, where, node.lineno)

    def _refuse(self, key: str, accepted: list[str], where: str, line: int) -> None:
        when = " and ".join(self.conds[-1]) or None
        self.refusals.setdefault(key, []).append(
            {
                "accepted": sorted(set(accepted)),
                "at": self._stage(),
                "where": f"{where} (line {line})",
                "when": when,
            }
        )


def analyse(srcs: dict[str, str | None]) -> dict[str, dict]:
    fields = fields_at(srcs)
    keys = {
        name
        for name, info in fields.items()
        if isinstance(info.get("default"), str) and not str(info["default"]).startswith("<")
    }
    compared: dict[str, set[str]] = {}
    refusals: dict[str, list[dict]] = {}
    for path in PATHS:
        src = srcs.get(path)
        if not src:
            continue
        reader = _Reader(keys, TRAINER_PATH if path == TRAINER_PATH else GRPO_PATH)
        reader.visit(ast.parse(src))
        for k, v in reader.compared.items():
            compared.setdefault(k, set()).update(v)
        for k, v in reader.refusals.items():
            refusals.setdefault(k, []).extend(v)
    out: dict[str, dict] = {}
    for key in sorted(compared):
        default = fields[key]["default"]
        sure = [r for r in refusals.get(key, []) if r["when"] is None]
        cond = [r for r in refusals.get(key, []) if r["when"] is not None]
        if sure:
            first = min(sure, key=lambda r: STAGES.index(r["at"]))
            accepted = set(first["accepted"])
            for r in sure:
                accepted &= set(r["accepted"])
            entry = {
                "default": default,
                "accepted": sorted(accepted | {default}),
                "refused_at": first["at"],
                "where": re.sub(r" \(line \d+\)$", "", first["where"]),
            }
        else:
            entry = {
                "default": default,
                "accepted": sorted(compared[key] | {default}),
                "refused_at": "silent",
                "where": None,
            }
        if cond:  # checks that run only under another setting: recorded, not judged on
            entry["conditional"] = [
                {"accepted": r["accepted"], "at": r["at"], "when": r["when"][:160]} for r in cond
            ]
        out[key] = entry
    return out


def wheel_sources(wheel_dir: str) -> list[tuple[Version, str, dict[str, str | None]]]:
    out = []
    for fname in sorted(os.listdir(wheel_dir)):
        m = re.match(r"^trl-(\d+\.\d+\.\d+)-py3-none-any\.whl$", fname)
        if not m:
            continue
        with zipfile.ZipFile(os.path.join(wheel_dir, fname)) as zf:
            names = set(zf.namelist())
            srcs = {p: (zf.read(p).decode("utf-8") if p in names else None) for p in PATHS}
        out.append((Version(m.group(1)), fname, srcs))
    return out


def build(snapshots: list[tuple[Version, str, dict[str, dict]]]) -> dict:
    """Per key, spans of consecutive releases with the same reading: first, last, and the entry."""
    keys: dict[str, list[dict]] = {}
    for version, _, table in snapshots:
        for key, entry in table.items():
            spans = keys.setdefault(key, [])
            if spans and spans[-1]["last"] == prev_of(snapshots, version) and _same(spans[-1], entry):
                spans[-1]["last"] = str(version)
            else:
                spans.append({"first": str(version), "last": str(version), **entry})
    return {
        "schema": "envdoctor.knowledge/1",
        "source": "huggingface/trl release tags and wheels "
        f"{snapshots[0][0]}..{snapshots[-1][0]}: {GRPO_PATH} (__post_init__), {TRAINER_PATH}",
        "generated_by": "scripts/derive_grpo_config_choices.py (ast parse; nothing imported)",
        "stages": {
            "config_init": "GRPOConfig(...) raises ValueError (before the model loads)",
            "trainer_init": "GRPOTrainer(...) raises (the model is loaded)",
            "first_step": "the first training step raises (model loaded, first generation done)",
            "silent": "no check: another value falls through to a default branch",
        },
        "releases": [str(v) for v, _, _ in snapshots],
        "origins": {str(v): o for v, o, _ in snapshots},
        "aliases": ALIASES,
        "choices": keys,
    }


def prev_of(snapshots: list[tuple[Version, str, dict[str, dict]]], version: Version) -> str | None:
    versions = [v for v, _, _ in snapshots]
    i = versions.index(version)
    return str(versions[i - 1]) if i else None


def _same(span: dict, entry: dict) -> bool:
    return all(span.get(k) == v for k, v in entry.items())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", help="path to a clone or bare mirror of huggingface/trl")
    ap.add_argument("--wheel-dir", help="directory of trl-*.whl for releases newer than the newest git tag")
    args = ap.parse_args()
    snapshots: list[tuple[Version, str, dict[str, dict]]] = []
    for version, tag in release_tags(args.repo):
        srcs = {p: git_show(args.repo, tag, p) for p in PATHS}
        if srcs[GRPO_PATH] is None:
            continue
        snapshots.append((version, f"tag {tag}", analyse(srcs)))
    newest = snapshots[-1][0] if snapshots else Version("0")
    if args.wheel_dir:
        for version, fname, srcs in wheel_sources(args.wheel_dir):
            if version > newest and srcs[GRPO_PATH] is not None:
                snapshots.append((version, f"wheel {fname}", analyse(srcs)))
    snapshots.sort(key=lambda s: s[0])
    if not snapshots:
        print("no GRPOConfig found", file=sys.stderr)
        return 1
    sys.stdout.write(
        "# Generated by scripts/derive_grpo_config_choices.py -- edit the script, not this file.\n"
    )
    sys.stdout.write(yaml.dump(build(snapshots), Dumper=_Dumper, sort_keys=False, width=120))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
