#!/usr/bin/env python3
"""Derive the patch history of the stack's wrappers (maintainer command).

Unsloth, unsloth_zoo and liger-kernel put their own functions in place of another package's
(``Trainer.get_batch_samples = _unsloth_get_batch_samples``, ``modeling_llama.LlamaForCausalLM.forward
= llama_lce_forward``, ``setattr(Trainer, "training_step", _unsloth_training_step)``). When the
patched package changes how it calls that method (transformers 4.50 passes ``device`` to
``Trainer.get_batch_samples``), the ``TypeError`` names the wrapper's function, not the original:
``_unsloth_get_batch_samples() takes 3 positional arguments but 4 were given``. The signature history
(scripts/derive_signature_history.py) knows the original; this command records which function of
which wrapper stands in for it, per wrapper release:

* ``patches``: ``[target package, target qualified name, patch function, releases]`` for every
  assignment (or ``setattr``) of a function over an attribute of another package of the stack,
  the attribute's owner resolved through the module's imports (``from transformers import
  Trainer``; ``import transformers``; ``from transformers.models.llama import modeling_llama``);
* ``defs``: each patch function's signature in the wrapper's releases (``self`` kept: it is a plain
  function, and Python counts ``self`` in the message), or ``@DIST`` where the wrapper imports it
  from another wrapper (unsloth's ``_unsloth_get_batch_samples`` lives in unsloth_zoo from 2025.3).

Releases are read as the signature history reads them (``release_reader`` of
scripts/derive_frame_index.py, through scripts/sibling.py: the wheels with ``zipfile``; unsloth's
and unsloth_zoo's repositories tag no releases, liger-kernel's keeps its package under ``src/``);
``ast`` only, nothing installed or imported. It writes
``rules/knowledge/patches.json.gz`` (schema ``envdoctor.patches/1``)::

    {"schema": …, "wrappers": {"unsloth": {"releases": [...], "source": "unslothai/unsloth",
        "patches": [["transformers", "Trainer.get_batch_samples", "_unsloth_get_batch_samples", "0-21"]],
        "defs": {"_unsloth_get_batch_samples": [["self,epoch_iterator,num_batches", "0-1"],
                                                ["@unsloth-zoo", "2-21"]]}}}}

Ranges are indices into ``releases`` (the signature history's encoding). Budget: 64 KB.

Usage (the wheels as for the signature history: ``pip download --no-deps unsloth==V -d WHEELS/unsloth``)::

    python scripts/derive_patch_history.py --wheels unsloth=WHEELS/unsloth \
        --wheels unsloth-zoo=WHEELS/unsloth-zoo --wheels liger-kernel=WHEELS/liger-kernel

Offline; tests build wheels in ``tmp_path`` (tests/triage/test_triage_patches.py).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "patches.json.gz"
SCHEMA = "envdoctor.patches/1"
BUDGET = 64_000
MAX_FILE = 2_000_000

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts: scripts/sibling.py
from sibling import load as _load  # noqa: E402

frames = _load("derive_frame_index")  # the releases of a git history or of wheels: one reading
sigs = _load("derive_signature_history")  # ``signature``: one writing of a parameter list

#: wrapper distribution -> (its import package folders, repository)
WRAPPERS: dict[str, tuple[tuple[str, ...], str]] = {
    "unsloth": (("unsloth",), "unslothai/unsloth"),
    "unsloth-zoo": (("unsloth_zoo",), "unslothai/unsloth-zoo"),
    "liger-kernel": (("liger_kernel",), "linkedin/Liger-Kernel"),
}
#: the packages whose attributes a wrapper's patch stands in for (import name -> distribution)
TARGETS = {
    "transformers": "transformers",
    "trl": "trl",
    "vllm": "vllm",
    "accelerate": "accelerate",
    "peft": "peft",
    "deepspeed": "deepspeed",
    "torch": "torch",
}
_IMPORTS = {"unsloth": "unsloth", "unsloth_zoo": "unsloth-zoo", "liger_kernel": "liger-kernel"}


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Names bound by the module's imports (anywhere in it: patches import inside functions) ->
    the dotted name they stand for."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    out.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _target(
    dotted: str, aliases: dict[str, str], own: str, classes: frozenset[str] = frozenset()
) -> tuple[str, str] | None:
    """``Trainer.get_batch_samples`` under ``from transformers import Trainer`` -> ("transformers",
    "Trainer.get_batch_samples"); None where it is not another stack package's attribute."""
    head, _, rest = dotted.partition(".")
    full = aliases.get(head)
    if full is None:
        # a class passed in (``def patch_gradient_accumulation_fix(Trainer)``): its package is
        # not said; triage looks the class up in every signature history ("" here)
        if (
            head[:1].isupper()
            and head not in classes
            and rest
            and "." not in rest
            and not rest.startswith("__")
        ):
            return "", f"{head}.{rest}"
        return None
    full = f"{full}.{rest}" if rest else full
    parts = full.split(".")
    dist = TARGETS.get(parts[0])
    if dist is None or dist == own or len(parts) < 2:
        return None
    attr, owner = parts[-1], parts[-2]
    if attr.startswith("__"):
        return None
    qual = f"{owner}.{attr}" if owner[:1].isupper() else attr
    return dist, qual


def _value(node: ast.expr, aliases: dict[str, str]) -> tuple[str, str | None] | None:
    """The patch function a value names: (name, the wrapper distribution it is imported from, or
    None: this module's own name)."""
    dotted = _dotted(node)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    full = aliases.get(head)
    if full is None:
        return (dotted, None) if not rest else None
    full = f"{full}.{rest}" if rest else full
    dist = _IMPORTS.get(full.split(".")[0])
    return (full.rsplit(".", 1)[-1], dist) if dist else None


def read_module(src: str, own: str) -> tuple[list[tuple[str, str, str]], dict[str, str], dict[str, str]]:
    """A module's patches ``(target dist, target qualname, function)``, the signatures of the
    functions it defines (any depth), and the wrapper each of its imported patch functions comes
    from."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return [], {}, {}
    aliases = _aliases(tree)
    classes = frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
    patches: list[tuple[str, str, str]] = []
    imported: dict[str, str] = {}
    defs: dict[str, str] = {}

    def add(dotted: str | None, value: ast.expr) -> None:
        where = _target(dotted, aliases, own, classes) if dotted else None
        got = _value(value, aliases) if where else None
        if where is None or got is None:
            return
        name, dist = got
        if name.startswith("__") or name in classes:
            return
        patches.append((where[0], where[1], name))
        if dist is not None and dist != own:
            imported[name] = dist

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.setdefault(node.name, sigs.signature(node, False))
        elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
            for t in node.targets:
                if isinstance(t, ast.Attribute):
                    add(_dotted(t), node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) == 3
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and isinstance(node.args[2], (ast.Name, ast.Attribute))
        ):
            base = _dotted(node.args[0])
            if base:
                add(f"{base}.{node.args[1].value}", node.args[2])
    return patches, defs, imported


def derive(dist: str, wheels: Path) -> dict[str, object]:
    """One wrapper's patches and its patch functions' signatures over its releases."""
    roots, source = WRAPPERS.get(dist, ((dist.replace("-", "_"),), ""))
    reader = frames.WheelReleases(wheels, dist)
    releases = reader.releases
    cache: dict[str, tuple[list[tuple[str, str, str]], dict[str, str], dict[str, str]]] = {}
    patches: dict[tuple[str, str, str], list[int]] = {}
    all_defs: list[dict[str, str]] = []
    all_imported: list[dict[str, str]] = []
    for index, (_, ref) in enumerate(releases):
        here: dict[str, str] = {}
        imported: dict[str, str] = {}
        for _path, (key, _) in reader.files(ref, roots).items():
            got = cache.get(key)
            if got is None:
                data = reader.read(key)
                got = cache[key] = (
                    read_module(data.decode("utf-8", "replace"), dist)
                    if len(data) <= MAX_FILE
                    else ([], {}, {})
                )
            for p in got[0]:
                patches.setdefault(p, []).append(index)
            for name, sig in got[1].items():
                here.setdefault(name, sig)
            imported.update(got[2])
        all_defs.append(here)
        all_imported.append(imported)
    reader.close()
    return {
        "releases": [v for v, _ in releases],
        "source": source,
        "patches": [[*p, sigs.intervals(sorted(set(ix)))] for p, ix in sorted(patches.items())],
        "_defs": all_defs,
        "_imported": all_imported,
    }


def finish(doc: dict[str, dict[str, object]]) -> None:
    """Each wrapper's ``defs``: the signatures, in its releases, of the functions any wrapper's
    patch names (a wrapper may define the function another one assigns); patches whose name no
    wrapper defines as a function (a class, a saved original) are dropped."""
    names = {p[2] for w in doc.values() for p in w["patches"]}  # type: ignore[union-attr]
    for w in doc.values():
        all_defs, all_imported = w.pop("_defs"), w.pop("_imported")
        defs: dict[str, dict[str, list[int]]] = {}
        for index, (here, imported) in enumerate(zip(all_defs, all_imported, strict=True)):  # type: ignore[call-overload]
            for name in names:
                sig = here.get(name)
                if sig is None and name in imported:
                    sig = "@" + imported[name]
                if sig is not None:
                    defs.setdefault(name, {}).setdefault(sig, []).append(index)
        w["defs"] = {
            n: [[s, sigs.intervals(ix)] for s, ix in sorted(rows.items(), key=lambda kv: kv[1][0])]
            for n, rows in sorted(defs.items())
        }
    defined = {n for w in doc.values() for n, rows in w["defs"].items() if any(r[0][:1] != "@" for r in rows)}  # type: ignore[union-attr]
    for w in doc.values():
        w["patches"] = [p for p in w["patches"] if p[2] in defined]  # type: ignore[union-attr]
    used = {p[2] for w in doc.values() for p in w["patches"]}  # type: ignore[union-attr]
    for w in doc.values():
        w["defs"] = {n: r for n, r in w["defs"].items() if n in used}  # type: ignore[union-attr]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--wheels", action="append", default=[], help="DIST=FOLDER of the wrapper's wheels")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET)
    args = ap.parse_args(argv)
    doc: dict[str, dict[str, object]] = {}
    for spec in args.wheels:
        dist, _, folder = spec.partition("=")
        doc[dist] = derive(dist, Path(folder))
    if not doc:
        ap.error("give --wheels DIST=FOLDER for each wrapper")
    finish(doc)
    size = frames.write({"schema": SCHEMA, "wrappers": doc}, args.out)
    for dist, w in doc.items():
        rel = w["releases"]
        assert isinstance(rel, list)
        span = f"{rel[0]}–{rel[-1]}" if rel else "none"
        print(f"{dist}: {len(rel)} releases ({span}), {len(w['patches'])} patches")  # type: ignore[arg-type]
    print(f"{size} bytes in {args.out}")
    if size > args.budget:
        print("over the budget", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
