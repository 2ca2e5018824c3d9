#!/usr/bin/env python3
"""Derive the fields of a package's configuration classes in the releases before its symbol history
(maintainer command).

The symbol history (rules/knowledge/symbols/, scripts/derive_symbol_history.py) reads release wheels
from a floor on (TRL >= 0.11, peft >= 0.13): a configuration class older than that floor (TRL's
``SFTConfig`` came with 0.9, peft's ``LoraConfig`` with 0.1) has releases whose fields no history
holds, so triage cannot tell "a field this class never had" (the code passes another class's field)
from "a field an older release did not have yet" (the installed release is older than the field).
This command reads those releases from the package's git history (a ``git clone --mirror``; the
session's ``fetch`` tool puts them under /work/.mirror/OWNER+NAME/repo): per release tag older than
``--until``, every top-level class whose name ends in Config / Arguments / Args / Params, with

* its base classes (by their short names);
* the keywords its constructor takes: an explicit ``__init__``'s parameters (``**`` for
  ``**kwargs``), else, for a ``@dataclass``, its annotated class-level fields (not ``ClassVar``);
  a class with neither takes its bases' (``i`` tells which releases define an ``__init__`` of their
  own or are dataclasses).

Nothing is imported or installed: ``git`` and ``ast`` only; a blob is parsed once.

It writes ``rules/knowledge/config_fields/DIST.json.gz`` (schema ``envdoctor.config_fields/1``)::

    {"schema": …, "package": "peft", "source": "huggingface/peft", "head": "<sha>",
     "until": "0.13.0",                       # the symbol history's first release (not read here)
     "from_first": true,                      # no final release tag older than the first read
     "releases": ["0.3.0", …],                # oldest first, final releases only
     "classes": {"LoraConfig": {"r": "0-14",  # releases with the class (index intervals)
                                "b": {"PeftConfig": "0-14"},
                                "i": "0-14",  # releases where it declares its keywords
                                "f": {"r": "0-14", "use_dora": "12-14", "**": ""}}}}

Usage (reproducible: the tags and the files at them are the input)::

    python scripts/derive_config_fields.py --git-dir /work/.mirror/huggingface+peft/repo \\
        --package peft --root src/peft --since 0.0.1 --until 0.13.0 --source huggingface/peft
    python scripts/derive_config_fields.py --git-dir /work/.mirror/huggingface+trl/repo \\
        --package trl --root trl --since 0.2.0 --until 0.11.0 --source huggingface/trl
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/gitread.py
from gitread import git as _git  # noqa: E402

SCHEMA = "envdoctor.config_fields/1"
CONFIG_CLASS = re.compile(r"(?:Config|Arguments|Args|Params)$")
TAG = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")  # final releases only
ROOT = Path(__file__).resolve().parents[1]


def _version(tag: str) -> tuple[int, int, int] | None:
    m = TAG.match(tag)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def _name(v: tuple[int, int, int]) -> str:
    return f"{v[0]}.{v[1]}.{v[2]}"


def _intervals(idx: list[int]) -> str:
    out: list[str] = []
    for i in sorted(set(idx)):
        if out and int(out[-1].split("-")[-1]) == i - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ",".join(x if "-" in x else f"{x}-{x}" for x in out)


def _short(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _short(node.value)
    return ""


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if "dataclass" in _short(target):
            return True
    return False


def classes_of(source: str) -> dict[str, dict[str, Any]]:
    """The configuration classes a module defines: ``{name: {"bases": [...], "own": bool,
    "keywords": [...]}}`` (``own``: the class declares its keywords: an ``__init__`` or dataclass
    fields; ``**`` among the keywords for ``**kwargs``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not CONFIG_CLASS.search(node.name):
            continue
        bases = [b for b in (_short(x) for x in node.bases) if b and b != "object"]
        init = next(
            (
                n
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"
            ),
            None,
        )
        keywords: list[str] = []
        own = False
        if init is not None:
            own = True
            a = init.args
            keywords = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.arg != "self"]
            if a.kwarg is not None:
                keywords.append("**")
        elif _is_dataclass(node):
            own = True
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    if "ClassVar" in ast.unparse(item.annotation):
                        continue
                    keywords.append(item.target.id)
        out[node.name] = {"bases": bases, "own": own, "keywords": keywords}
    return out


def derive(git_dir: str, package: str, root: str, since: str, until: str, source: str) -> dict[str, Any]:
    floor, ceiling = _version(since), _version(until)
    assert floor is not None and ceiling is not None, (since, until)
    tags = {}
    older = False  # a final release older than the floor is not read
    for tag in _git(git_dir, "tag").split():
        v = _version(tag)
        if v is not None and floor <= v < ceiling:
            tags.setdefault(v, tag)  # "v0.10" and "v0.10.0": one release
        elif v is not None and v < floor:
            older = True
    releases = sorted(tags)
    parsed: dict[str, dict[str, dict[str, Any]]] = {}  # blob sha -> classes
    table: dict[str, dict[str, Any]] = {}
    for r, v in enumerate(releases):
        listing = _git(git_dir, "ls-tree", "-r", tags[v], "--", root)
        for line in listing.splitlines():
            meta, path = line.split("\t", 1)
            sha = meta.split()[2]
            if not path.endswith(".py") or "/tests/" in path or "/examples/" in path:
                continue
            if sha not in parsed:
                parsed[sha] = classes_of(_git(git_dir, "cat-file", "-p", sha))
            for name, spec in parsed[sha].items():
                row = table.setdefault(name, {"r": [], "b": {}, "i": [], "f": {}})
                if r in row["r"]:
                    continue  # two modules define it: the first one read (a release's own) stands
                row["r"].append(r)
                for b in spec["bases"]:
                    row["b"].setdefault(b, []).append(r)
                if spec["own"]:
                    row["i"].append(r)
                for k in spec["keywords"]:
                    row["f"].setdefault(k, []).append(r)
    head = _git(git_dir, "rev-parse", tags[releases[-1]]).strip() if releases else ""
    classes = {
        name: {
            "r": _intervals(row["r"]),
            "b": {b: _intervals(x) for b, x in sorted(row["b"].items())},
            "i": _intervals(row["i"]),
            "f": {k: _intervals(x) for k, x in sorted(row["f"].items())},
        }
        for name, row in sorted(table.items())
    }
    return {
        "schema": SCHEMA,
        "package": package,
        "source": source,
        "head": head,
        "until": until,
        "from_first": not older,  # the oldest release read is the first: every class's birth is read
        "releases": [_name(v) for v in releases],
        "classes": classes,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--package", required=True)
    ap.add_argument("--root", required=True, help="the package's folder in the repository (trl, src/peft)")
    ap.add_argument("--since", required=True)
    ap.add_argument("--until", required=True, help="the symbol history's first release (not read)")
    ap.add_argument("--source", default="", help="owner/name of the repository")
    ap.add_argument("--out", default="", help="default: rules/knowledge/config_fields/PACKAGE.json.gz")
    args = ap.parse_args(argv)
    doc = derive(args.git_dir, args.package, args.root, args.since, args.until, args.source)
    out = (
        Path(args.out)
        if args.out
        else ROOT / "rules" / "knowledge" / "config_fields" / f"{args.package}.json.gz"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    with gzip.GzipFile(out, "wb", mtime=0) as fh:  # the same input gives the same bytes
        fh.write(data)
    print(
        f"{out}: {len(doc['releases'])} releases, {len(doc['classes'])} classes, {out.stat().st_size} bytes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
