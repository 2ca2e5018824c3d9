#!/usr/bin/env python3
"""Derive the module-wrapper table (rules/knowledge/wrappers.yaml) from the wrappers' own sources
(maintainer command).

A training stack wraps the model it trains: DistributedDataParallel and DataParallel hold it as
``.module`` and forward nothing; DeepSpeedEngine forwards an attribute only when ``dir()`` of the
module it holds lists it; FullyShardedDataParallel, torch.compile's OptimizedModule and PEFT's
PeftModel forward every missing attribute to the module they hold (``getattr``). Triage
(envdoctor/triage/wrapped.py) reads ``AttributeError: '<Wrapper>' object has no attribute 'a'``
against this table: which wrapper, how it forwards, what it holds, the names of its own API in any
release read (an attribute of that API missing is the wrapper's drift, not a read through it), and
the attributes a transformers model has (``config``, ``base_model_prefix``, ``generate`` …).

Each class is read with ``ast`` (never imported): a ``__getattr__`` that calls ``dir()`` forwards by
``dir``; one that calls ``getattr(self.X, name)`` forwards to X; none (only ``nn.Module``'s) forwards
nothing, and ``self.module = …`` in ``__init__`` names what it holds. The own names: its methods,
class attributes and ``self.X`` assignments, over every release read.

Sources: git mirrors at their release tags (deepspeed, peft; ``--mirrors``, as the other derive
scripts) and the installed torch and transformers (their files, found with ``importlib.util.find_spec``
without importing them: ``--site`` to read another environment's site-packages).

    python scripts/derive_wrappers.py --mirrors /work/.mirror [--site DIR] [--out FILE]

Offline; tests run the class reader on small sources (tests/scripts/test_derive_wrappers.py).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "wrappers.yaml"
SINCE = "2023-06-01"
_TAG = r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$"

#: installed package -> [(file inside it, class, the wrapper's documentation URL)]
INSTALLED: dict[str, list[tuple[str, str, str]]] = {
    "torch": [
        (
            "nn/parallel/distributed.py",
            "DistributedDataParallel",
            "https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html",
        ),
        (
            "nn/parallel/data_parallel.py",
            "DataParallel",
            "https://docs.pytorch.org/docs/stable/generated/torch.nn.DataParallel.html",
        ),
        (
            "distributed/fsdp/fully_sharded_data_parallel.py",
            "FullyShardedDataParallel",
            "https://docs.pytorch.org/docs/stable/fsdp.html",
        ),
        (
            "_dynamo/eval_frame.py",
            "OptimizedModule",
            "https://docs.pytorch.org/docs/stable/generated/torch.compile.html",
        ),
    ],
}
#: mirrored package -> (mirror folder, repository, [(file in the repository, class)]); a class
#: whose base is another wrapper of the list inherits its forwarding
MIRRORED: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "deepspeed": (
        "deepspeedai+DeepSpeed",
        "deepspeedai/DeepSpeed",
        [
            ("deepspeed/runtime/engine.py", "DeepSpeedEngine"),
            ("deepspeed/runtime/pipe/engine.py", "PipelineEngine"),
            ("deepspeed/runtime/hybrid_engine.py", "DeepSpeedHybridEngine"),
        ],
    ),
    "peft": (
        "huggingface+peft",
        "huggingface/peft",
        [("src/peft/peft_model.py", "PeftModel*"), ("src/peft/mixed_model.py", "PeftMixedModel")],
    ),
}
#: transformers' model classes and mixins whose attributes a model has
MODEL: list[tuple[str, str]] = [
    ("modeling_utils.py", "PreTrainedModel"),
    ("modeling_utils.py", "ModuleUtilsMixin"),
    ("modeling_utils.py", "EmbeddingAccessMixin"),
    ("generation/utils.py", "GenerationMixin"),
    ("utils/hub.py", "PushToHubMixin"),
    ("integrations/peft.py", "PeftAdapterMixin"),
]


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts: scripts/sibling.py
from sibling import load as _load  # noqa: E402


def _base_names(cls: ast.ClassDef) -> list[str]:
    out = []
    for b in cls.bases:
        out.append(b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "")
    return out


def classes(source: str, pattern: str) -> list[ast.ClassDef]:
    """The top-level classes of ``source`` named ``pattern`` (``Name*``: the class and every class
    of the file whose base is one of them)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    top = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    if not pattern.endswith("*"):
        return [c for c in top if c.name == pattern]
    found = [c for c in top if c.name == pattern[:-1]]
    names = {c.name for c in found}
    for c in top:
        if c.name not in names and names & set(_base_names(c)):
            found.append(c)
            names.add(c.name)
    return found


def forwarding(cls: ast.ClassDef) -> tuple[str, str] | None:
    """How ``cls``'s own ``__getattr__`` forwards: ("dir", held) / ("getattr", held); None where the
    class defines none."""
    fn = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"), None)
    if fn is None:
        return None
    held = ""
    kind = ""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "dir":
                kind = "dir"
            elif node.func.id == "getattr" and node.args:
                target = node.args[0]
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    held = held or target.attr
                    kind = kind or "getattr"
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__dict__"
        ):
            held = str(node.slice.value)
    return (kind or "getattr", held)


def own_names(cls: ast.ClassDef) -> set[str]:
    """The class's methods, class attributes and ``self.X`` assignments."""
    out: set[str] = set()
    for n in cls.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(n.name)
        elif isinstance(n, ast.Assign):
            out.update(t.id for t in n.targets if isinstance(t, ast.Name))
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    for node in ast.walk(cls):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                out.add(t.attr)
    return out


def holds_module(cls: ast.ClassDef) -> str:
    """What a class that forwards nothing holds: ``self.module = …`` in its ``__init__``."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    for node in ast.walk(init) if init is not None else ():
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    and t.attr in ("module", "model", "_orig_mod")
                ):
                    return t.attr
    return ""


def _entry(
    cls: ast.ClassDef, package: str, source: str, own: set[str], table: dict[str, dict[str, object]]
) -> dict[str, object]:
    fwd = forwarding(cls)
    parent = next((table[b] for b in _base_names(cls) if b in table), None)
    if fwd is None and parent is not None:
        kind, held = str(parent["forwards"]), str(parent["holds"])
    elif fwd is None:
        kind, held = "none", holds_module(cls)
    else:
        kind, held = fwd
    inherited = set(parent["own"]) if parent is not None else set()  # type: ignore[call-overload]
    return {
        "package": package,
        "forwards": kind,
        "holds": held or "module",
        "source": source,
        "own": sorted(own | inherited),
    }


def _site(package: str, site: Path | None) -> Path:
    if site is not None:
        return site / package
    spec = importlib.util.find_spec(package)  # finds the folder; the package is not imported
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed: pass --site DIR")
    return Path(next(iter(spec.submodule_search_locations)))


def derive(mirrors: Path, site: Path | None, since: str = SINCE) -> dict[str, object]:
    frames = _load("derive_frame_index")
    table: dict[str, dict[str, object]] = {}
    read: dict[str, list[str]] = {}  # mirrored package -> its releases read, oldest first
    for package, rows in INSTALLED.items():
        base = _site(package, site)
        for rel, name, url in rows:
            text = (base / rel).read_text(errors="replace")
            for cls in classes(text, name):
                table[cls.name] = _entry(cls, package, url, own_names(cls), table)
    for package, (folder, repo, rows) in MIRRORED.items():
        d = mirrors / folder
        git_dir = d / "repo" if (d / "repo").is_dir() else d
        releases = frames.tag_releases(git_dir, _TAG, since)
        blobs = frames.Blobs(git_dir)
        try:
            read[package] = [v for v, _ in releases]
            for rel, pattern in rows:
                seen: dict[str, dict[str, list[int]]] = {}  # class -> own name -> releases (indices)
                present: dict[str, list[int]] = {}  # class -> the releases that have it
                methods: dict[str, set[str]] = {}  # class -> its methods in any release
                last: dict[str, ast.ClassDef] = {}
                tag = ""
                for i, (version, commit) in enumerate(releases):
                    text = blobs.get(f"{commit}:{rel}").decode("utf-8", "replace")
                    for cls in classes(text, pattern):
                        for n in own_names(cls):
                            seen.setdefault(cls.name, {}).setdefault(n, []).append(i)
                        methods.setdefault(cls.name, set()).update(
                            n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                        )
                        present.setdefault(cls.name, []).append(i)
                        last[cls.name] = cls
                        tag = version
                for name, cls in last.items():
                    url = f"https://github.com/{repo}/blob/v{tag}/{rel}"
                    table[name] = _entry(cls, package, url, set(seen[name]), table)
                    span = set(present[name])
                    api = {  # a method not in every release that has the class: when it came or went (an
                        # attribute set by a method may be absent in a release that has it: left out)
                        n: [releases[min(ix)][0], releases[max(ix)][0]]
                        for n, ix in sorted(seen[name].items())
                        if set(ix) != span and n in methods[name]
                    }
                    parent = next((table[b] for b in _base_names(cls) if b in table and b != name), None)
                    inherited = dict(parent.get("api") or {}) if parent is not None else {}  # type: ignore[call-overload]
                    table[name]["api"] = {**inherited, **api}
        finally:
            blobs.close()
    model: set[str] = set()
    tf = _site("transformers", site)
    for rel, name in MODEL:
        path = tf / rel
        if path.is_file():
            for cls in classes(path.read_text(errors="replace"), name):
                names = own_names(cls)
                model.update(n for n in names if not n.startswith("__"))
    return {"wrappers": table, "model_attributes": sorted(model), "releases": read}


HEADER = """\
# Generated by scripts/derive_wrappers.py from the wrappers' own sources (do not edit by hand):
# torch's DistributedDataParallel, DataParallel, FullyShardedDataParallel and OptimizedModule (the
# installed torch), DeepSpeed's engines and PEFT's PeftModel classes (their release tags), and the
# attributes a transformers model has (PreTrainedModel and its mixins, the installed transformers).
# forwards: none (nn.Module's own __getattr__ only: the wrapped model's attributes are not reached),
# dir (forwarded when dir() of the held module lists them), getattr (every missing attribute is
# forwarded to the held module). holds: the attribute the wrapped module is kept in. own: the
# wrapper's own API in any release read; api: of its methods, those not in every release read, with
# the first and last release that has each (releases: the releases read per package). Read by
# envdoctor/triage/wrapped.py (TRI035; TRI009 for the wrapper's own API of another release).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--site", type=Path, help="a site-packages folder holding torch and transformers")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    data = derive(args.mirrors, args.site)
    doc = {
        "schema": "envdoctor.knowledge/1",
        **data,
        "references": sorted({str(w["source"]) for w in data["wrappers"].values()}),  # type: ignore[attr-defined]
    }
    args.out.write_text(HEADER + yaml.safe_dump(doc, sort_keys=False, width=110))
    counts = f"{len(data['wrappers'])} wrappers, {len(data['model_attributes'])} model attributes"  # type: ignore[arg-type]
    print(f"wrote {args.out}: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
