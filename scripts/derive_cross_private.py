#!/usr/bin/env python3
"""Find the private names one package of the stack calls in another (maintainer command).

The signature history (scripts/derive_signature_history.py) keeps public functions, and a
``Trainer`` subclass's hooks. Packages of the stack also call each other's ``_``-functions and
``_``-methods: TRL calls vLLM's ``LLM._run_engine``-like internals and transformers'
``Trainer._get_train_sampler``, Unsloth and unsloth_zoo patch and call vLLM's and transformers'
internals, liger-kernel replaces transformers' private forwards. A ``TypeError`` raised there is
API drift as much as a public function's, so those names are kept too, and only those.

This reads the callers' releases (``--wheels DIR`` of each, or a git mirror's tags, as the other
derive scripts do: scripts/derive_frame_index.py's ``release_reader``) with ``ast`` (nothing
installed or imported) and records, per callee package, each private name (``_x``, not a dunder)
that a caller's code

* imports from the callee (``from vllm.x import _foo``), or
* reads, calls or assigns as an attribute of a name bound to the callee (``vllm.x._foo``,
  ``m._foo`` after ``import vllm.x as m``, ``LLM._run_engine`` after ``from vllm import LLM``), or
* reads or calls as an attribute of any other object (``self.llm.llm_engine._run_engine(...)``)
  where the callee defines a function or method of that name and the caller defines nothing of it
  (no ``def _foo``, no ``_foo =``, no ``self._foo =``): whose else could it be.

It writes ``rules/knowledge/cross_private.json`` (schema ``envdoctor.cross_private/1``)::

    {"schema": …, "callees": {"vllm": {"_run_engine": ["trl", "unsloth-zoo"], …}, …},
     "read": {"trl": ["0.11.4", …], …}}

``derive_signature_history.py`` keeps the private functions and methods of each callee whose name
is listed (and records their callers); triage tells a private function's ``TypeError`` as drift
only where a frame of one of its callers is in the traceback.

Usage (the wheels and mirrors the signature history reads; the shipped file's callers and callees,
2026-11-29)::

    python scripts/derive_cross_private.py --cache /tmp/cross.pickle --every 3 --skip transformers=models/ \
        --caller trl=WHEELS/trl --caller unsloth=WHEELS/unsloth --caller unsloth-zoo=WHEELS/unsloth-zoo \
        --caller liger-kernel=WHEELS/liger-kernel --caller transformers=WHEELS/transformers \
        --caller accelerate=git:/work/.mirror/huggingface+accelerate/repo \
        --caller peft=git:/work/.mirror/huggingface+peft/repo \
        --callee vllm=WHEELS/vllm --callee transformers=WHEELS/transformers --callee trl=WHEELS/trl \
        --callee accelerate=git:/work/.mirror/huggingface+accelerate/repo \
        --callee peft=git:/work/.mirror/huggingface+peft/repo \
        --callee deepspeed=git:/work/.mirror/deepspeedai+DeepSpeed/repo \
        --callee flash-attn=git:/work/.mirror/Dao-AILab+flash-attention/repo \
        --callee bitsandbytes=git:/work/.mirror/bitsandbytes-foundation+bitsandbytes/repo \
        --callee liger-kernel=WHEELS/liger-kernel

Offline: wheels and git directories only.
"""

from __future__ import annotations

import argparse
import ast
import json
import pickle
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "cross_private.json"
SCHEMA = "envdoctor.cross_private/1"
MAX_FILE = 2_000_000

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sibling import load as _load  # noqa: E402

frames = _load("derive_frame_index")

#: distribution -> import package (its folder in a wheel; others: the name with ``_`` for ``-``)
IMPORTS = {
    "trl": "trl",
    "transformers": "transformers",
    "vllm": "vllm",
    "accelerate": "accelerate",
    "peft": "peft",
    "deepspeed": "deepspeed",
    "liger-kernel": "liger_kernel",
    "unsloth": "unsloth",
    "unsloth-zoo": "unsloth_zoo",
    "flash-attn": "flash_attn",
    "bitsandbytes": "bitsandbytes",
}
_ROOTS = {"peft": ("src/peft",), "accelerate": ("src/accelerate",)}
_TAG = r"^v?(\d+\.\d+\.\d+(?:\.post\d+)?)$"


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and len(name) > 2


def _root_of(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def scan(src: str, top: dict[str, str] | None = None) -> tuple[set[tuple[str, str]], set[str], set[str]]:
    """One caller file: ``(bound, loose, own)``: (callee, name) pairs imported or read through a
    name bound to another package (``top``: import package -> distribution of the callees; None:
    the import package itself, filtered later); private attribute names read of other objects;
    private names the file defines itself."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return set(), set(), set()
    bound: set[tuple[str, str]] = set()
    loose: set[str] = set()
    own: set[str] = set()
    alias: dict[str, str] = {}  # a local name -> the callee distribution it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                head = a.name.split(".")[0]
                dist = head if top is None else top.get(head)
                if dist:
                    alias[(a.asname or a.name).split(".")[0]] = dist
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            head = node.module.split(".")[0]
            dist = head if top is None else top.get(head)
            if dist:
                for a in node.names:
                    if private(a.name):
                        bound.add((dist, a.name))
                    alias[a.asname or a.name] = dist
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and private(node.name):
            own.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and private(node.id):
            own.add(node.id)
        elif isinstance(node, ast.Attribute) and private(node.attr):
            root = _root_of(node.value)
            if root in alias:
                bound.add((alias[root], node.attr))
            elif isinstance(node.ctx, ast.Store) and root == "self":
                own.add(node.attr)
            elif isinstance(node.ctx, ast.Load):
                loose.add(node.attr)
    return bound, loose, own


def defined(src: str) -> set[str]:
    """The private functions and methods a callee file defines."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return set()
    return {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and private(n.name)
    }


def import_of(dist: str) -> str:
    return IMPORTS.get(dist, dist.replace("-", "_"))


def _reader(dist: str, spec: str):  # type: ignore[no-untyped-def]
    roots = _ROOTS.get(dist, (import_of(dist),))
    if spec.startswith("git:"):
        return frames.release_reader(Path(spec[4:]), dist, roots, _TAG, "2024-06-01"), roots
    return frames.release_reader(None, dist, roots, wheels=Path(spec)), roots


def texts(dist: str, spec: str, every: int = 1, skip: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """``(key, text)`` of each distinct ``.py`` file of ``dist``'s releases (``every``: every
    N-th release, the newest always; ``skip``: folders of the package left out)."""
    reader, roots = _reader(dist, spec)
    seen: set[str] = set()
    rel = reader.releases
    picked = [r for i, r in enumerate(rel) if i % every == 0 or i == len(rel) - 1]
    for _, ref in picked:
        for path, (key, _) in reader.files(ref, roots).items():
            if key in seen or "/tests/" in f"/{path}" or path.startswith(skip):
                continue
            seen.add(key)
            data = reader.read(key)
            if len(data) <= MAX_FILE:
                yield key, data.decode("utf-8", "replace")
    reader.close()


class Cache:
    """Each file's facts by the key of its text (kept on disk between runs)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[tuple[str, str], Any] = {}
        if path is not None and path.is_file():
            self.data = pickle.loads(path.read_bytes())  # noqa: S301 (the maintainer's own cache)

    def get(self, kind: str, key: str, text: str, fn: Callable[[str], Any]) -> Any:
        hit = self.data.get((kind, key))
        if hit is None:
            hit = self.data[(kind, key)] = fn(text)
        return hit

    def save(self) -> None:
        if self.path is not None:
            self.path.write_bytes(pickle.dumps(self.data, protocol=pickle.HIGHEST_PROTOCOL))


def releases(dist: str, spec: str) -> list[str]:
    reader, _ = _reader(dist, spec)
    out = [v for v, _ in reader.releases]
    reader.close()
    return out


def derive(
    callers: dict[str, str],
    callees: dict[str, str],
    every: int = 1,
    cache: Cache | None = None,
    skip: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, object]:
    """The private names each callee has that the callers call (module docstring); ``every``: the
    callees' releases read for the names they define (every N-th); ``skip``: a caller's folders
    left out (transformers' ``models/``: no model calls another package's internals)."""
    cache = cache or Cache(None)
    skip = skip or {}
    callee_defs: dict[str, set[str]] = {}
    for dist, spec in callees.items():
        names: set[str] = set()
        for key, text in texts(dist, spec, every):
            names |= cache.get("def", key, text, defined)
        callee_defs[dist] = names
        print(f"{dist}: {len(names)} private functions and methods", file=sys.stderr)
    top = {import_of(d): d for d in callees}
    found: dict[str, dict[str, set[str]]] = {}
    read: dict[str, list[str]] = {}
    for caller, spec in callers.items():
        others = {k: v for k, v in top.items() if v != caller}
        bound: set[tuple[str, str]] = set()
        loose: set[str] = set()
        own: set[str] = set()
        for key, text in texts(caller, spec, 1, skip.get(caller, ())):
            b, lo, ow = cache.get("scan", key, text, scan)
            bound |= {(others[head], n) for head, n in b if head in others}
            loose |= lo
            own |= ow
        read[caller] = releases(caller, spec)
        print(f"{caller}: read", file=sys.stderr)
        for callee, name in bound:
            if name in callee_defs.get(callee, ()):  # a callee's function or method, not a variable
                found.setdefault(callee, {}).setdefault(name, set()).add(caller)
        for name in loose - own:
            homes = [c for c, defs in callee_defs.items() if c != caller and name in defs]
            for callee in homes:
                found.setdefault(callee, {}).setdefault(name, set()).add(caller)
    return {
        "schema": SCHEMA,
        "callees": {
            c: {n: sorted(v) for n, v in sorted(names.items())} for c, names in sorted(found.items())
        },
        "read": read,
    }


def _pairs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        dist, _, spec = item.partition("=")
        if not dist or not spec:
            raise SystemExit(f"--caller/--callee DIST=WHEELS_DIR or DIST=git:GIT_DIR: {item}")
        out[dist] = spec
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--caller", action="append", default=[], help="DIST=WHEELS_DIR or DIST=git:GIT_DIR")
    ap.add_argument("--callee", action="append", default=[], help="DIST=WHEELS_DIR or DIST=git:GIT_DIR")
    ap.add_argument(
        "--every", type=int, default=1, help="read every N-th release of the callees (newest always)"
    )
    ap.add_argument("--skip", action="append", default=[], help="DIST=FOLDER/: a caller's folder left out")
    ap.add_argument("--cache", type=Path, help="a pickle of the files' facts, kept between runs")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    skip: dict[str, tuple[str, ...]] = {}
    for item in args.skip:
        dist, _, folder = item.partition("=")
        skip[dist] = (*skip.get(dist, ()), folder)
    cache = Cache(args.cache)
    data = derive(_pairs(args.caller), _pairs(args.callee), args.every, cache, skip)
    cache.save()
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    callees = data["callees"]
    assert isinstance(callees, dict)
    for c, names in callees.items():
        print(f"{c}: {len(names)} private names called from other packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
