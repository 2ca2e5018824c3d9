#!/usr/bin/env python3
"""Derive which of transformers' model classes support gradient checkpointing, per release.

A maintainer command.

Triage (envdoctor/triage/remotecode.py) reads ``PhiForCausalLM does not support gradient
checkpointing.``: transformers' ``PreTrainedModel.gradient_checkpointing_enable`` raises it for a
class whose ``supports_gradient_checkpointing`` is False. Where transformers' own class of that name
supports it, the class that refused is another's: a model repository's remote code
(``trust_remote_code=True``) of the same name.

Per release wheel (``transformers-X-py3-none-any.whl``, or an installed ``transformers`` folder),
for every class of ``models/*/modeling_*.py`` whose name ends like a model's (``Model``, ``For…``):
whether it or a base of it in the same file sets ``supports_gradient_checkpointing = True`` (the
value ``PreTrainedModel`` itself sets is False). Nothing is imported: ``zipfile`` and ``ast`` only.

It writes ``rules/knowledge/gradient_checkpointing.json.gz`` (schema
``envdoctor.gradient_checkpointing/1``)::

    {"schema": …, "package": "transformers", "releases": ["4.33.3", …],
     "classes": {"PhiForCausalLM": "--yyy"}}   # per release read: y supports, n refuses, - absent

Usage::

    python scripts/derive_gradient_checkpointing.py /tmp/wheels/transformers-4.33.3-py3-none-any.whl …
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

SCHEMA = "envdoctor.gradient_checkpointing/1"
ROOT = Path(__file__).resolve().parents[1]
MODEL_CLASS = re.compile(r"(?:Model|For[A-Z]\w*)$")
MODELING = re.compile(r"transformers/models/(?!auto/)[^/]+/modeling_[^/]+\.py$")


def _files(source: Path) -> Iterator[tuple[str, str]]:
    if source.is_dir():
        for p in sorted(source.glob("models/*/modeling_*.py")):
            if p.parent.name == "auto":
                continue
            yield f"transformers/{p.relative_to(source).as_posix()}", p.read_text(errors="replace")
        return
    with zipfile.ZipFile(source) as z:
        for name in sorted(z.namelist()):
            if MODELING.search(name):
                yield name, z.read(name).decode("utf-8", errors="replace")


def _version(source: Path) -> str:
    if source.is_dir():
        m = re.search(r'__version__ = "([^"]+)"', (source / "__init__.py").read_text())
        return m.group(1) if m else source.name
    return source.name.split("-")[1]


def _own_value(cls: ast.ClassDef) -> bool | None:
    for node in cls.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        value = getattr(node, "value", None)
        for t in targets:
            if (
                isinstance(t, ast.Name)
                and t.id == "supports_gradient_checkpointing"
                and isinstance(value, ast.Constant)
            ):
                return bool(value.value)
    return None


def _base_names(cls: ast.ClassDef) -> list[str]:
    out = []
    for b in cls.bases:
        if isinstance(b, ast.Name):
            out.append(b.id)
        elif isinstance(b, ast.Attribute):
            out.append(b.attr)
    return out


def release(source: Path) -> dict[str, bool]:
    """Model class -> supports gradient checkpointing, in one release."""
    out: dict[str, bool] = {}
    for _, text in _files(source):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}

        def value(name: str, depth: int = 0, classes: dict[str, ast.ClassDef] = classes) -> bool:
            c = classes.get(name)
            if c is None or depth > 8:
                return False  # PreTrainedModel's own default, or a base of another file
            own = _own_value(c)
            if own is not None:
                return own
            return any(value(b, depth + 1) for b in _base_names(c))

        for name in classes:
            if (
                MODEL_CLASS.search(name)
                and not name.endswith(("PreTrainedModel", "Output"))
                and not name.startswith("TF")
            ):
                out[name] = value(name)
    return out


def main(argv: list[str]) -> int:
    sources = [Path(a) for a in argv]
    if not sources:
        print(__doc__)
        return 2
    releases = [_version(s) for s in sources]
    per = [release(s) for s in sources]
    names = sorted(set().union(*per))
    classes = {n: "".join("-" if n not in r else "y" if r[n] else "n" for r in per) for n in names}
    doc = {
        "schema": SCHEMA,
        "package": "transformers",
        "releases": releases,
        "source": (
            "release wheels: models/*/modeling_*.py, supports_gradient_checkpointing of the class "
            "or its bases in the file (ast)"
        ),
        "classes": classes,
    }
    out = ROOT / "rules" / "knowledge" / "gradient_checkpointing.json.gz"
    with gzip.open(out, "wt", compresslevel=9) as fh:
        json.dump(doc, fh, sort_keys=True, separators=(",", ":"))
    print(f"wrote {out}: {len(classes)} classes, {len(releases)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
