#!/usr/bin/env python3
"""Derive which model types transformers and which architectures vLLM know, per release (maintainer command).

A model newer than the installed library is refused when it loads: transformers raises "The
checkpoint you are trying to load has model type `qwen3` but Transformers does not recognize this
architecture" (a ``KeyError`` of ``CONFIG_MAPPING`` underneath), vLLM "Model architectures
['Qwen3ForCausalLM'] are not supported for now". Which release first has a name is in the
release's own code: transformers' ``CONFIG_MAPPING_NAMES`` (``models/auto/configuration_auto.py``;
from 5.10 generated into ``models/auto/auto_mappings.py`` and updated in configuration_auto) and
vLLM's model registry (``_VLLM_MODELS`` in ``vllm/model_executor/models/registry.py``, the union
of its per-task dicts; an older release without registry.py keeps ``_MODELS`` in
``models/__init__.py``). Both are read with ``ast`` (dict and ``OrderedDict`` literals, ``**``
spreads, ``.update(...)`` calls and ``from .x import`` of a sibling module read too); nothing is
installed or imported.

The releases are the wheels in a folder, read with ``zipfile`` through
``scripts/derive_frame_index.py``'s ``WheelReleases`` (as ``derive_raise_sites.py --wheels``).
Fetch them with pip into a cache folder outside the repository (one command per release)::

    pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_35_x86_64 \
        --platform manylinux_2_24_x86_64 --platform manylinux1_x86_64 --platform any \\
        vllm==0.33.0 -d WHEELS/vllm
    pip download --no-deps --only-binary=:all: transformers==5.24.0 -d WHEELS/transformers
    python scripts/derive_model_support.py --wheels WHEELS

(a wheel trimmed to the files read, the same names, serves as well.) It writes
``rules/knowledge/models.json.gz`` (schema ``envdoctor.models/1``)::

    {"schema": …,
     "transformers": {"releases": ["4.45.0", …], "names": {"qwen3": "20", "mpt": "0-60", …}},
     "vllm": {"releases": ["0.7.3", …], "names": {"Qwen3ForCausalLM": "5", …},
              "oot": {"BartForConditionalGeneration": "https://github.com/vllm-project/bart-plugin"}}}

``names`` maps a model type (transformers) or an architecture (vLLM) to the runs of indexes into
``releases`` (oldest first) whose code has it: ``"20"`` from release 20 to the newest read,
``"0-60"`` releases 0 to 60 (removed in 61), ``"3-9,12"`` (removed, then back). ``oot``: the
architectures the newest vLLM moved out of its tree, with the plugin it names. Budget: 64 KB
(``--budget``; the command fails above it). Triage reads the file only for a message that refuses
a model (envdoctor/knowledge/models.py).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "models.json.gz"
SCHEMA = "envdoctor.models/1"
BUDGET = 64_000


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts: scripts/sibling.py
from sibling import load as _load  # noqa: E402

frames = _load("derive_frame_index")  # the wheels' reading

#: package -> (import root, files read in order (a later one updates an earlier one's names), the
#: module-level name that holds the table, fallbacks)
TABLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "transformers": (
        "transformers",
        ("models/auto/auto_mappings.py", "models/auto/configuration_auto.py"),
        ("CONFIG_MAPPING_NAMES",),
    ),
    "vllm": (
        "vllm",
        ("model_executor/models/__init__.py", "model_executor/models/registry.py"),
        ("_VLLM_MODELS", "_MODELS"),
    ),
}


def _keys(node: ast.AST, env: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The string-keyed mapping an expression builds: a dict literal (``**`` spreads of names
    known), ``OrderedDict(...)`` / ``dict(...)`` of a list of pairs, a dict or keywords."""
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                spread = _keys(v, env)
                out.update(spread or {})
            elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                out[k.value] = v.value if isinstance(v, ast.Constant) else None
        return out
    if isinstance(node, ast.Name):
        return dict(env[node.id]) if node.id in env else None
    if isinstance(node, (ast.List, ast.Tuple)):
        out = {}
        for elt in node.elts:
            if isinstance(elt, (ast.Tuple, ast.List)) and elt.elts and isinstance(elt.elts[0], ast.Constant):
                key = elt.elts[0].value
                if isinstance(key, str):
                    val = elt.elts[1] if len(elt.elts) > 1 else None
                    out[key] = val.value if isinstance(val, ast.Constant) else None
        return out
    func = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) else None
    func = func or (node.func if isinstance(node, ast.Call) else None)  # OrderedDict[str, str](...)
    if isinstance(node, ast.Call) and isinstance(func, ast.Name) and func.id in ("OrderedDict", "dict"):
        out = {}
        for arg in node.args:
            out.update(_keys(arg, env) or {})
        for kw in node.keywords:
            if kw.arg is None:
                out.update(_keys(kw.value, env) or {})
            else:
                out[kw.arg] = kw.value.value if isinstance(kw.value, ast.Constant) else None
        return out
    return None


def tables(sources: list[str]) -> dict[str, dict[str, Any]]:
    """The module-level string-keyed mappings of ``sources`` (read in order, one namespace: a
    later file's ``from .x import NAME`` of an earlier one keeps its value), with the module's
    ``NAME.update(...)`` and ``NAME[...] = ...`` statements applied."""
    env: dict[str, dict[str, Any]] = {}
    for text in sources:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for stmt in tree.body:
            target: ast.expr | None = None
            value: ast.expr | None = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                target, value = stmt.target, stmt.value
            if isinstance(target, ast.Name) and value is not None:
                found = _keys(value, env)
                if found is not None:
                    env[target.id] = found
                continue
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                key = target.slice
                if target.value.id in env and isinstance(key, ast.Constant) and isinstance(key.value, str):
                    env[target.value.id][key.value] = None
                continue
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "update"
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id in env
                and call.args
            ):
                env[call.func.value.id].update(_keys(call.args[0], env) or {})
    return env


def names_at(package: str, texts: dict[str, str]) -> tuple[set[str], dict[str, Any]]:
    """The names of ``package``'s table in one release (``texts``: module path -> text), and the
    whole namespace read."""
    _, files, wanted = TABLES[package]
    env = tables([texts[f] for f in files if f in texts])
    for name in wanted:
        if name in env:
            return set(env[name]), env
    return set(), env


def runs(indexes: list[int], newest: int) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5,9"``; a run that reaches ``newest`` is open: ``"9"``."""
    out: list[str] = []
    start = prev = indexes[0]
    for i in [*indexes[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(str(start) if prev == newest else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(out)


def derive(package: str, wheels: Path) -> dict[str, Any]:
    root, files, _ = TABLES[package]
    reader = frames.WheelReleases(wheels, package)
    releases: list[str] = []
    seen: dict[str, list[int]] = {}
    env: dict[str, Any] = {}
    try:
        for version, ref in reader.releases:
            listing = reader.files(ref, (root,), files)
            texts = {m: reader.read(key).decode("utf-8", "replace") for m, (key, _) in listing.items()}
            found, env = names_at(package, texts)
            if not found:
                print(f"{package} {version}: no table read; left out", file=sys.stderr)
                continue
            for name in found:
                seen.setdefault(name, []).append(len(releases))
            releases.append(version)
    finally:
        reader.close()
    newest = len(releases) - 1
    out: dict[str, Any] = {
        "releases": releases,
        "names": {n: runs(ix, newest) for n, ix in sorted(seen.items())},
    }
    oot = env.get("_OOT_SUPPORTED_MODELS") if package == "vllm" else None
    if oot:
        out["oot"] = {k: v for k, v in sorted(oot.items()) if isinstance(v, str)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--wheels", type=Path, required=True, help="a folder with transformers/ and vllm/ of wheels"
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET)
    args = ap.parse_args(argv)
    doc: dict[str, Any] = {"schema": SCHEMA}
    for package in TABLES:
        folder = args.wheels / package
        if not folder.is_dir():
            print(f"{package}: no folder {folder}", file=sys.stderr)
            return 2
        doc[package] = derive(package, folder)
        rel = doc[package]["releases"]
        print(
            f"{package}: {len(rel)} releases ({rel[0] if rel else '-'}–{rel[-1] if rel else '-'}), "
            f"{len(doc[package]['names'])} names"
        )
    blob = gzip.compress(json.dumps(doc, separators=(",", ":"), sort_keys=True).encode(), 9, mtime=0)
    print(f"{len(blob)} bytes")
    if len(blob) > args.budget:
        print(f"over the budget of {args.budget} bytes", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(blob)
    return 0


if __name__ == "__main__":
    sys.exit(main())
