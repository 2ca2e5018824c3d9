#!/usr/bin/env python3
"""Derive the attributes of transformers' model classes, per release (maintainer command).

Triage (envdoctor/triage/artifacts.py, TRI038's third reading) asks of ``'Qwen2_5_VLForConditional
Generation' object has no attribute 'vision_model'`` read by a project's frame: does the class lack
the attribute in every release read, while other model families have it? Then the project's code
path was written for another architecture (VLM-R1's InternVL line run on a Qwen2.5-VL).

Per release wheel (``transformers-X-py3-none-any.whl``, or an installed ``transformers`` folder),
for every class of ``models/*/modeling_*.py`` whose name ends like a model's (``Model``,
``For…``): the names an instance has, from the class and its bases resolved by name across the
release's modeling files: attributes assigned on ``self`` in any method, methods, properties and
class-level names. The bases every model shares (``PreTrainedModel``, ``GenerationMixin``,
``nn.Module``'s members named in ``modeling_utils.py`` and ``generation/utils.py``) go to
``common`` once. Nothing is imported: ``zipfile`` and ``ast`` only.

It writes ``rules/knowledge/model_attributes.json.gz`` (schema ``envdoctor.model_attributes/1``)::

    {"schema": …, "package": "transformers", "releases": ["4.46.3", …],
     "common": "config generate …",                       # every model's, in every release read
     "classes": {"Qwen2_5_VLForConditionalGeneration": "lm_head model visual …"}}

A class's names are the union over the releases read (a name of any release is not "lacking").

Usage::

    python scripts/derive_model_attributes.py /tmp/wheels/transformers-4.46.3-py3-none-any.whl …
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import sys
import zipfile
from pathlib import Path

SCHEMA = "envdoctor.model_attributes/1"
ROOT = Path(__file__).resolve().parents[1]
MODEL_CLASS = re.compile(r"(?:Model|For[A-Z]\w*)$")
COMMON_FILES = ("transformers/modeling_utils.py", "transformers/generation/utils.py")
COMMON_BASES = {
    "PreTrainedModel",
    "GenerationMixin",
    "Module",
    "nn.Module",
    "PushToHubMixin",
    "ModuleUtilsMixin",
}
_NN_MODULE = [
    "training",
    "forward",
    "parameters",
    "named_parameters",
    "modules",
    "named_modules",
    "children",
    "named_children",
    "buffers",
    "named_buffers",
    "state_dict",
    "load_state_dict",
    "to",
    "cuda",
    "cpu",
    "half",
    "float",
    "bfloat16",
    "train",
    "eval",
    "requires_grad_",
    "zero_grad",
    "apply",
    "register_buffer",
    "register_parameter",
    "add_module",
    "get_submodule",
    "register_forward_hook",
    "register_forward_pre_hook",
    "register_full_backward_hook",
]


def _names(cls: ast.ClassDef) -> set[str]:
    out: set[str] = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(node.name)
            for sub in ast.walk(node):
                targets: list[ast.expr] = []
                if isinstance(sub, ast.Assign):
                    targets = list(sub.targets)
                elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                    targets = [sub.target]
                elif isinstance(sub, ast.Call) and getattr(sub.func, "id", "") == "setattr":
                    continue
                for t in targets:
                    for e in ast.walk(t):
                        if (
                            isinstance(e, ast.Attribute)
                            and isinstance(e.value, ast.Name)
                            and e.value.id == "self"
                        ):
                            out.add(e.attr)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def _base_names(cls: ast.ClassDef) -> list[str]:
    out = []
    for b in cls.bases:
        if isinstance(b, ast.Name):
            out.append(b.id)
        elif isinstance(b, ast.Attribute):
            out.append(b.attr)
    return out


def _files(source: str) -> list[tuple[str, str]]:
    p = Path(source)
    if p.is_dir():
        base = p.parent
        return [
            (str(f.relative_to(base)), f.read_text(errors="replace"))
            for f in p.rglob("*.py")
            if "/models/" in str(f) or str(f.relative_to(base)) in COMMON_FILES
        ]
    with zipfile.ZipFile(p) as z:
        return [
            (n, z.read(n).decode("utf-8", errors="replace"))
            for n in z.namelist()
            if n.endswith(".py") and ("/models/" in n or n in COMMON_FILES)
        ]


def read_release(source: str) -> tuple[dict[str, set[str]], set[str]]:
    classes: dict[str, tuple[set[str], list[str]]] = {}
    common: set[str] = set(_NN_MODULE)
    for name, text in _files(source):
        modeling = re.search(r"/models/[^/]+/modeling_(?!tf_|flax_)\w+\.py$", name) is not None
        if not modeling and name not in COMMON_FILES:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            if name in COMMON_FILES:
                if node.name in COMMON_BASES or node.name.endswith("Mixin"):
                    common |= _names(node)
                continue
            own, bases = _names(node), _base_names(node)
            if node.name in classes:  # one name in two files (a copy): the union
                own |= classes[node.name][0]
                bases = classes[node.name][1] + bases
            classes[node.name] = (own, bases)

    def resolve(cls: str, depth: int = 0) -> set[str]:
        if depth > 12 or cls not in classes:
            return set()
        own, bases = classes[cls]
        out = set(own)
        for b in bases:
            if b not in COMMON_BASES:
                out |= resolve(b, depth + 1)
        return out

    resolved = {c: resolve(c) - common for c in classes if MODEL_CLASS.search(c)}
    return resolved, common


def main(argv: list[str]) -> None:
    out = ROOT / "rules" / "knowledge" / "model_attributes.json.gz"
    releases: list[str] = []
    union: dict[str, set[str]] = {}
    common_all: set[str] | None = None
    for source in argv:
        m = re.search(r"transformers-(\d[\w.]*?)-py3", source)
        version = m.group(1) if m else "installed"
        if not m:
            init = Path(source) / "__init__.py"
            v = re.search(r'__version__ = "([^"]+)"', init.read_text())
            version = v.group(1) if v else "installed"
        classes, common = read_release(source)
        releases.append(version)
        common_all = common if common_all is None else common_all & common
        for c, names in classes.items():
            union.setdefault(c, set()).update(names)
        print(version, len(classes), "classes", file=sys.stderr)
    common_all = common_all or set()
    doc = {
        "schema": SCHEMA,
        "package": "transformers",
        "releases": releases,
        "source": "release wheels: models/*/modeling_*.py, modeling_utils.py, generation/utils.py (ast)",
        "common": " ".join(sorted(common_all)),
        "classes": {c: " ".join(sorted(n - common_all)) for c, n in sorted(union.items())},
    }
    with gzip.open(out, "wt", compresslevel=9) as fh:
        json.dump(doc, fh, separators=(",", ":"))
    print(f"wrote {out} ({len(union)} classes, {len(releases)} releases)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
