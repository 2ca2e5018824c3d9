#!/usr/bin/env python3
"""Derive the keyword history of transformers' model classes (maintainer command).

The signature history (scripts/derive_signature_history.py) keeps transformers' functions whose
parameter list changed within the releases it reads (4.46 on); a model class's ``forward`` that a
caller passes a keyword only newer (or older) releases take — ``Qwen2ForCausalLM.forward() got an
unexpected keyword argument 'num_logits_to_keep'`` under transformers 4.40 — needs the model
classes' keywords over a longer span, and there are some thousand such classes. This command
records them compactly, aggregated over the classes: per method (``forward``, ``generate``,
``__init__``; the configuration classes' ``__init__``, whose parameters are their attributes),
per class-name suffix (``ForCausalLM``, ``ForConditionalGeneration``, ``Model``, ``Config`` …),
per keyword, the releases in which some class of that suffix takes the keyword by name; and per
class stem (``Qwen2`` of ``Qwen2ForCausalLM``) the releases in which that class takes ``**kwargs``
(there, Python takes any keyword: the call does not fail where it is made).

Read from the wheels (``zipfile``; nothing installed or imported, ``ast`` only): the
``transformers/models/*/modeling_*.py`` and ``configuration_*.py`` files (not ``modular_*``,
``modeling_tf_*``, ``modeling_flax_*``), the last patch of each minor release given. Releases are
ordered by version; each wheel is read once. Output ``rules/knowledge/signatures/
transformers-models.keywords.gz`` (not a ``*.json.gz``: no package's signature history), schema
``envdoctor.model_keywords/1``::

    {"schema": …, "package": "transformers", "releases": ["4.30.2", …],
     "scope": {"forward": {"ForCausalLM": {"Qwen2": "7-52", …}, …}, …},   # the class has the method
     "methods": {"forward": {"ForCausalLM": {"num_logits_to_keep": {"": "10-18", "Qwen2": "15-18",
                                                                    "-": "Bert Gpt2 …"}, …}, …}, …},
     "var": {"forward": {"ForCausalLM": {"Qwen2": "20-55", …}, …}, …}}

Ranges are indices into ``releases`` (``"3-9,12"``). Budget: 150 kB (``--budget``; the command
fails above it). Usage::

    pip download --no-deps --only-binary=:all: transformers==4.40.2 -d WHEELS   # each minor's last patch
    python scripts/derive_model_keywords.py WHEELS [WHEELS2 …]

Offline: it reads the wheels only.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import pickle
import re
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "signatures" / "transformers-models.keywords.gz"
SCHEMA = "envdoctor.model_keywords/1"
BUDGET = 150_000
MAX_FILE = 2_000_000
METHODS = ("forward", "generate", "__init__")
_WHEEL = re.compile(r"^transformers-(\d+)\.(\d+)\.(\d+)-py3-none-any\.whl$")
_FILE = re.compile(r"^transformers/models/(\w+)/(modeling|configuration)_(\w+)\.py$")
#: a model class's name: its stem and suffix (``Qwen2`` + ``ForCausalLM``; ``Qwen2`` + ``Model``)
#: ``(stem, suffix, method, keywords, takes **kwargs)``
Fact = tuple[str, str, str, list[str], bool]
_CLASS = re.compile(r"^(?P<stem>[A-Z]\w*?)(?P<suffix>For[A-Z]\w+|PreTrainedModel|Model|Config)$")


def split_class(name: str) -> tuple[str, str] | None:
    """``(stem, suffix)`` of a model or configuration class's name, or None."""
    m = _CLASS.match(name)
    return (m.group("stem"), m.group("suffix")) if m else None


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], bool]:
    a = fn.args
    names = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]][1:]
    return names, a.kwarg is not None


def _config_names(cls: ast.ClassDef) -> list[str]:
    """A configuration class's attributes: its ``__init__``'s parameters, the names its body assigns
    (``head_dim: int | None = None``: transformers 5's ``@strict`` dataclass-like configurations have
    no ``__init__`` of their own), and the ``self.X =`` of its methods."""
    out: list[str] = []
    for sub in cls.body:
        if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
            out.append(sub.target.id)
        elif isinstance(sub, ast.Assign):
            out += [t.id for t in sub.targets if isinstance(t, ast.Name)]
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if sub.name == "__init__":
                out += _params(sub)[0]
            for node in ast.walk(sub):
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else [node.target]
                    if isinstance(node, (ast.AnnAssign, ast.AugAssign))
                    else []
                )
                for t in targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                    ):
                        out.append(t.attr)
    return sorted(set(out))


def file_classes(src: str, config: bool) -> Iterable[Fact]:
    """``(stem, suffix, method, keywords, takes **kwargs)`` of each top-level model class, per method
    it defines itself; of a configuration class (``config``), one row: its attributes
    (``_config_names``) under ``__init__``."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError):
        return
    for st in tree.body:
        if not isinstance(st, ast.ClassDef):
            continue
        parts = split_class(st.name)
        if parts is None or (parts[1] == "Config") != config:
            continue
        if config:
            init = next((f for f in st.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            yield parts[0], parts[1], "__init__", _config_names(st), bool(init and init.args.kwarg)
            continue
        for sub in st.body:
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name in METHODS:
                names, var = _params(sub)
                yield parts[0], parts[1], sub.name, names, var


def wheels(folders: Iterable[Path]) -> list[tuple[tuple[int, int, int], Path]]:
    """The last patch of each minor release among the folders' wheels, oldest first."""
    best: dict[tuple[int, int], tuple[tuple[int, int, int], Path]] = {}
    for folder in folders:
        for p in sorted(folder.glob("transformers-*.whl")):
            m = _WHEEL.match(p.name)
            if m is None:
                continue
            v = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            if v[:2] not in best or v > best[v[:2]][0]:
                best[v[:2]] = (v, p)
    return sorted(best.values())


def intervals(bits: int) -> str:
    runs: list[str] = []
    i = 0
    while bits >> i:
        if bits >> i & 1:
            j = i
            while bits >> (j + 1) & 1:
                j += 1
            runs.append(str(i) if i == j else f"{i}-{j}")
            i = j + 1
        else:
            i += 1
    return ",".join(runs)


def read(folders: Iterable[Path], log: object = None) -> tuple[list[str], list[list[Fact]]]:
    """The releases and, per release, the facts of its model and configuration classes."""
    chosen = wheels(folders)
    releases = [".".join(map(str, v)) for v, _ in chosen]
    seen: dict[bytes, list[Fact]] = {}
    out: list[list[Fact]] = []
    for _, path in chosen:
        facts: list[Fact] = []
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                m = _FILE.match(info.filename)
                if m is None or info.file_size > MAX_FILE or m.group(3).startswith(("tf_", "flax_")):
                    continue
                data = z.read(info)
                if data not in seen:
                    seen[data] = list(
                        file_classes(data.decode("utf-8", "replace"), m.group(2) == "configuration")
                    )
                facts += seen[data]
        out.append(facts)
        if callable(log):
            log(f"read {path.name}")
    return releases, out


def derive(releases: list[str], facts: list[list[Fact]]) -> dict[str, object]:
    """The document (module docstring): per method, suffix and keyword the releases where some
    class of the suffix takes it (``""``), with the stems whose own releases differ from that
    (within the releases the stem's class has the method: ``scope``), those that never take it
    listed under ``"-"``. Only the keywords some class gained or lost while it had the method (a
    keyword every class took all along, or never, tells no drift)."""
    scope: dict[str, dict[str, dict[str, int]]] = {}
    kw: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    var: dict[str, dict[str, dict[str, int]]] = {}
    for i, rel in enumerate(facts):
        for stem, suffix, method, names, takes_var in rel:
            key = "config" if suffix == "Config" else method
            srow = scope.setdefault(key, {}).setdefault(suffix, {})
            srow[stem] = srow.get(stem, 0) | 1 << i
            row = kw.setdefault(key, {}).setdefault(suffix, {})
            for n in names:
                if n.startswith("_"):
                    continue  # a private attribute (a configuration's ``_attn_implementation``)
                per = row.setdefault(n, {})
                per[stem] = per.get(stem, 0) | 1 << i
            if takes_var and key != "config":  # a configuration's **kwargs sets only what is passed
                vrow = var.setdefault(key, {}).setdefault(suffix, {})
                vrow[stem] = vrow.get(stem, 0) | 1 << i
    methods: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
    for key, rows in sorted(kw.items()):
        for suffix, row in sorted(rows.items()):
            for n, per in sorted(row.items()):
                agg = 0
                for b in per.values():
                    agg |= b
                cell, none, drift = {"": intervals(agg)}, [], False
                for stem, within in scope[key][suffix].items():
                    own = per.get(stem, 0)
                    drift = drift or bool(own) and own != within
                    if own == agg & within:
                        continue
                    if own:
                        cell[stem] = intervals(own)
                    else:
                        none.append(stem)
                if none:
                    cell["-"] = " ".join(sorted(none))
                if drift:  # some class gained or lost it while it had the method: drift can be told
                    methods.setdefault(key, {}).setdefault(suffix, {})[n] = cell
    return {
        "schema": SCHEMA,
        "package": "transformers",
        "releases": releases,
        "scope": {
            k: {s: {n: intervals(b) for n, b in sorted(row.items())} for s, row in sorted(rows.items())}
            for k, rows in sorted(scope.items())
        },
        "methods": methods,
        "var": {
            k: {s: {n: intervals(b) for n, b in sorted(row.items())} for s, row in sorted(rows.items())}
            for k, rows in sorted(var.items())
        },
    }


def encode(doc: dict[str, object]) -> bytes:
    return gzip.compress(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode(), mtime=0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheels", nargs="+", type=Path, help="folders of transformers wheels")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument("--cache", type=Path, help="a pickle of the wheels' facts (written, then read)")
    args = ap.parse_args(argv)
    if args.cache is not None and args.cache.is_file():
        releases, facts = pickle.loads(args.cache.read_bytes())  # noqa: S301 (the maintainer's own file)
    else:
        releases, facts = read(args.wheels, log=lambda s: print(s, file=sys.stderr))
        if args.cache is not None:
            args.cache.write_bytes(pickle.dumps((releases, facts)))
    doc = derive(releases, facts)
    data = encode(doc)
    if len(data) > args.budget:
        print(f"{len(data)} bytes: over the budget of {args.budget}", file=sys.stderr)
        return 1
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data)} bytes, {len(doc['releases'])} releases")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
