#!/usr/bin/env python3
"""Derive which names TRL and vLLM import from their requirements on a run's path (maintainer command).

For every TRL wheel in the cache (the folder scripts/refresh_knowledge.py fills: ``CACHE/trl/``;
nothing installed, nothing imported) it reads, with ``zipfile`` and ``ast``, the import closure of
``from trl import GRPOTrainer``: ``trl/__init__.py``, ``trl/trainer/__init__.py``,
``grpo_trainer.py`` and ``grpo_config.py``, then every TRL module these import at module level
(a lazy package's name followed to the submodule that defines it), each parent package too. In
each module of that closure it keeps the imports from a requirement (transformers, accelerate,
datasets) that run unconditionally when the module loads (top-level statements outside any
``if`` / ``try``: a guarded or fallback import may never run, so it is no evidence), and from
torch, which TRL imports at module level without declaring it (TRL 0.29-1.13's
``from torch.distributed.fsdp import FSDPModule`` in trl/models/utils.py: torch 2.6 on), and checks each
``from MODULE import NAME`` (and ``import MODULE``) against the requirement's symbol history
(rules/knowledge/symbols/, scripts/derive_symbol_history.py). It writes
``rules/knowledge/requirement_api.yaml``: per TRL release and requirement, how many names it imports
and, for each name some scanned release of the requirement lacks, those releases (as specifiers
over the history's releases). PKG004 reads it to judge an unmet floor: a name the installed
requirement lacks is an ImportError on the way to the first step (an error, named); every name
there is pip check's complaint only (a warning).

It also writes ``rules/knowledge/requirement_floors.yaml``, the compact part the static check
reads on every run: per importer release and target, the API floor (the first scanned release
of the target from which every name is there, where the releases lacking one are all below it).
PKG004 reads it for a target the importer does not declare (TRL's torch) and the resolver
(``fix``'s package plan) keeps each TRL candidate's torch at or above it.

vLLM's releases (``CACHE/vllm/vllm-X-*.whl``, the wheels read in place: only the central directory
and the ``.py`` members the closure opens) get the same derivation for transformers: the closure
of ``import vllm``, ``vllm.LLM`` and the engine's start (engine core, executor, worker, model
runner and loader, the config / tokenizer / processor loading of vllm/transformers_utils). A
model architecture's module (one vllm/model_executor/models/registry.py names) is left out: it
loads only for its model. A class's constructor reads (TRL's GRPOConfig) are not followed there:
vLLM's config classes are built for their model only.

Usage:
    python scripts/derive_requirement_api.py --cache /tmp/sig13/wheels           # write
    python scripts/derive_requirement_api.py --cache /tmp/sig13/wheels --check   # exit 1 on change
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sibling import load as _load  # noqa: E402

rk = _load("refresh_knowledge")

#: the requirements whose floors TRL declares and GRPO's path imports (rules/knowledge/requirements.yaml)
TARGETS = ("transformers", "accelerate", "datasets")
#: what GRPO's path imports from a requirement TRL does not declare: torch (every GRPO run has it)
UNDECLARED = ("torch",)
#: the modules ``from trl import GRPOTrainer`` loads first (TRL's lazy modules resolve the name there)
SEEDS = ("trl", "trl.trainer", "trl.trainer.grpo_trainer", "trl.trainer.grpo_config")
#: the modules ``import vllm`` / ``vllm.LLM(...)`` load on every run, whatever the model (each only
#: where the release has it): the entry points, the engine (V0's and V1's core, its executor,
#: worker, model runner, model loader and registry package) and its config / tokenizer / processor
#: loading. Their module-level imports are followed from there.
VLLM_SEEDS = (
    "vllm",
    "vllm.entrypoints.llm",
    "vllm.engine.arg_utils",
    "vllm.engine.llm_engine",
    "vllm.config",
    "vllm.v1.engine.llm_engine",
    "vllm.v1.engine.core",
    "vllm.v1.engine.core_client",
    "vllm.v1.executor.abstract",
    "vllm.v1.worker.gpu_worker",
    "vllm.v1.worker.gpu_model_runner",
    "vllm.model_executor.model_loader",
    "vllm.model_executor.models",
    "vllm.transformers_utils.config",
    "vllm.transformers_utils.tokenizer",
    "vllm.transformers_utils.processor",
    "vllm.tokenizers",
    "vllm.multimodal",
)


@dataclass(frozen=True)
class Importer:
    """An importer whose declared floors PKG004 judges at the API."""

    seeds: tuple[str, ...]  # the modules its run loads first
    targets: tuple[str, ...]  # the requirements judged
    needs: str  # a release without this module is not judged (TRL before GRPOTrainer)
    constructors: bool  # follow ``self.attr`` read in its classes' __init__ / __post_init__


IMPORTERS = {
    "trl": Importer(SEEDS, TARGETS + UNDECLARED, "trl.trainer.grpo_trainer", True),
    "vllm": Importer(VLLM_SEEDS, ("transformers",), "vllm.entrypoints.llm", False),
}
OUT = "requirement_api.yaml"
FLOORS = "requirement_floors.yaml"


def _module_of(path: str) -> tuple[str, bool]:
    """``trl/trainer/__init__.py`` -> ``("trl.trainer", True)``."""
    base = path[: -len(".py")]
    if base.endswith("/__init__"):
        return base[: -len("/__init__")].replace("/", "."), True
    return base.replace("/", "."), False


def _unconditional(tree: ast.Module) -> Iterable[ast.stmt]:
    """The module's top-level statements that run whenever it loads (not inside if / try / with)."""
    return [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]


def _load_time(stmts: Iterable[ast.stmt]) -> Iterable[ast.AST]:
    """The expressions that run whenever the module loads: its unconditional top-level statements
    and its classes' bodies (a class body runs at import), the decorators, bases and defaults of
    its functions, not a function's body nor an if / try / with / loop block."""
    for s in stmts:
        if isinstance(s, ast.ClassDef):
            yield from (*s.decorator_list, *s.bases, *s.keywords)
            yield from _load_time(s.body)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from (*s.decorator_list, *s.args.defaults, *(d for d in s.args.kw_defaults if d))
        elif isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)):
            yield s


def _attributes(tree: ast.Module, bound: Mapping[str, tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """``Name.attr`` read at load time where ``Name`` is imported from a target at module level
    (``_VALID_DICT_FIELDS = TrainingArguments._VALID_DICT_FIELDS + [...]`` in TRL's GRPOConfig):
    ``(target, module, "Name.attr")``."""
    out: set[tuple[str, str, str]] = set()
    for node in _load_time(tree.body):
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in bound:
                target, module, name = bound[n.value.id]
                out.add((target, module, f"{name}.{n.attr}"))
    return out


#: the methods that run whenever the class is used: a config's __post_init__, a trainer's __init__
ALWAYS = ("__init__", "__post_init__")


def _own(cls: ast.ClassDef) -> set[str]:
    """The names a class binds itself: its methods, class-body names, ``self.X =`` anywhere in it."""
    own = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for n in ast.walk(cls):
        for t in n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", None)]:
            for x in ast.walk(t) if isinstance(t, ast.AST) else ():
                if isinstance(x, ast.Name):
                    own.add(x.id)
                elif isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name) and x.value.id == "self":
                    own.add(x.attr)
    return own


def _always_reads(cls: ast.ClassDef) -> set[str]:
    """``self.X`` read in the class's ``__init__`` / ``__post_init__``: their unconditional
    statements and the tests of their top-level ``if`` (a branch may never run)."""
    out: set[str] = set()
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name not in ALWAYS:
            continue
        for st in fn.body:
            node = st.test if isinstance(st, ast.If) else st
            if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.expr)):
                continue
            for x in ast.walk(node):
                if (
                    isinstance(x, ast.Attribute)
                    and isinstance(x.ctx, ast.Load)
                    and isinstance(x.value, ast.Name)
                    and x.value.id == "self"
                ):
                    out.add(x.attr)
    return out


def _inherited(
    classes: list[tuple[str, ast.ClassDef, Mapping[str, tuple[str, str, str]]]],
) -> set[tuple[str, str, str]]:
    """``self.attr`` read by a TRL class deriving (through TRL's own classes) from one class of a
    target (``GRPOConfig(_BaseConfig)``, ``_BaseConfig(TrainingArguments)``) in its ``__init__`` /
    ``__post_init__`` (_always_reads), where no TRL class on the way binds ``attr``: the target's
    class must have it (``self.parallelism_config`` in TRL 1.x's GRPOConfig.__post_init__: a field
    of TrainingArguments since 4.56): ``(target, module, "Base.attr")``. A class with any other
    base (not TRL's, not the one target class) is passed over: that base may provide the name."""
    by_name: dict[str, tuple[ast.ClassDef, Mapping[str, tuple[str, str, str]]]] = {}
    twice: set[str] = set()  # a name two modules define: unresolvable
    for _, cls, bound in classes:
        if cls.name in by_name:
            twice.add(cls.name)
        by_name[cls.name] = (cls, bound)

    def chain(cls: ast.ClassDef, bound: Mapping[str, Any], depth: int) -> tuple[Any, set[str]] | None:
        own, targets = _own(cls), set()
        for b in cls.bases:
            name = b.id if isinstance(b, ast.Name) else ""
            if name in bound:
                targets.add(bound[name])
            elif name in by_name and name not in twice and depth < 8:
                up = chain(*by_name[name], depth + 1)
                if up is None:
                    return None
                targets.add(up[0])
                own |= up[1]
            else:
                return None
        return (targets.pop(), own) if len(targets) == 1 else None

    out: set[tuple[str, str, str]] = set()
    for _, cls, bound in classes:
        found = chain(cls, bound, 0)
        if found is not None:
            (target, module, base), own = found
            out |= {(target, module, f"{base}.{a}") for a in _always_reads(cls) - own}
    return out


def _binds(tree: ast.Module, name: str) -> bool:
    bound, _, _ = rk._top_level_names(tree, "", False)
    return name in bound


def model_modules(rel: Any) -> set[str]:
    """vLLM's model architecture modules: those its registry names (``"LlamaForCausalLM":
    ("llama", "LlamaForCausalLM")`` -> ``vllm.model_executor.models.llama``), loaded only for
    their model."""
    path = "vllm/model_executor/models/registry.py"
    tree = rk._parse(rel.files[path]) if path in rel.files else None
    out: set[str] = set()
    for n in ast.walk(tree) if tree is not None else ():
        if isinstance(n, ast.Dict):
            for v in n.values:
                if (
                    isinstance(v, ast.Tuple)
                    and len(v.elts) >= 2
                    and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in v.elts[:2])
                ):
                    out.add(f"vllm.model_executor.models.{v.elts[0].value}")  # type: ignore[attr-defined]
    return out


def closure(rel: Any, package: str = "trl") -> tuple[list[str], list[tuple[str, str, str | None]]]:
    """``(modules, imports)``: the modules of ``package`` its run loads (TRL: GRPO's import;
    vLLM: its import and engine start), and the unconditional imports from a target in them:
    ``(target, module, name or None for import MODULE)``."""
    spec = IMPORTERS[package]
    targets = spec.targets
    paths = {_module_of(p)[0]: p for p in rel.files if p.startswith(f"{package}/") and p.endswith(".py")}
    for m in model_modules(rel) if package == "vllm" else ():
        paths.pop(m, None)  # a model's own module: loaded for that model only
    seen: set[str] = set()
    queue = [m for m in spec.seeds if m in paths]
    found: set[tuple[str, str, str | None]] = set()
    classes: list[tuple[str, ast.ClassDef, Mapping[str, tuple[str, str, str]]]] = []

    def add(module: str) -> None:
        parts = module.split(".")
        for i in range(1, len(parts) + 1):  # a module's parent packages load first
            m = ".".join(parts[:i])
            if m in paths and m not in seen and m not in queue:
                queue.append(m)

    while queue:
        module = queue.pop(0)
        seen.add(module)
        path = paths[module]
        is_pkg = path.endswith("/__init__.py")
        tree = rk._parse(rel.files[path])
        if tree is None:
            continue
        bound: dict[str, tuple[str, str, str]] = {}
        for s in _unconditional(tree):
            if isinstance(s, ast.Import):
                for a in s.names:
                    top = a.name.split(".")[0]
                    if top == package:
                        add(a.name)
                    elif top in targets and "." in a.name:
                        found.add((top, a.name, None))
                continue
            src = rk._resolve(module, is_pkg, s.level, s.module)
            top = src.split(".")[0]
            if top == package:
                add(src)
                for a in s.names:
                    if a.name == "*":
                        continue
                    if f"{src}.{a.name}" in paths:
                        add(f"{src}.{a.name}")
                    elif src in paths and paths[src].endswith("/__init__.py"):
                        add_lazy(src, a.name, paths, rel, add)
            elif top in targets:
                found |= {(top, src, a.name) for a in s.names if a.name != "*"}
                bound |= {a.asname or a.name: (top, src, a.name) for a in s.names if a.name != "*"}
        found |= _attributes(tree, bound)
        classes += [(module, c, bound) for c in tree.body if isinstance(c, ast.ClassDef)]
    if spec.constructors:
        found |= _inherited(classes)
    return sorted(seen), sorted(found, key=lambda t: (t[0], t[1], t[2] or ""))


def add_lazy(package: str, name: str, paths: Mapping[str, str], rel: Any, add: Any) -> None:
    """``from trl.models import X`` where the package's ``__init__`` does not bind ``X`` itself (a
    lazy module): the direct submodule that defines ``X`` loads."""
    init = rk._parse(rel.files[paths[package]])
    if init is not None and _binds(init, name):
        return
    for module, path in sorted(paths.items()):
        if module.rsplit(".", 1)[0] != package or path.endswith("/__init__.py"):
            continue
        tree = rk._parse(rel.files[path])
        if tree is not None and any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name
            for n in tree.body
        ):
            add(module)
            return


def _have(h: Any, module: str, name: str | None) -> int:
    """The releases with ``import module`` / ``from module import name`` / ``name``'s attribute
    (``"TrainingArguments._VALID_DICT_FIELDS"``: the class's own or a base's of this package; 0 where
    an attribute may come from another package's base class: no evidence)."""
    if name is None:
        return int(h.module(module))
    owner, _, attr = name.partition(".")
    if not attr:
        return int(h.name(module, name))
    member, foreign = h.member(owner, "a", attr)
    if foreign:
        return 0
    return int(h.name(module, owner) & (member | h.name(f"{module}.{owner}", attr)))


def derive(releases: Mapping[str, Mapping[str, Any]], histories: Mapping[str, Any]) -> dict[str, Any]:
    """The data file's document: ``scanned`` (the requirements' releases in their histories),
    ``importers.IMPORTER.RELEASE.TARGET`` (``releases``: importer -> version -> release):
    ``names`` (how many imported) and ``lacking`` (a name some scanned release lacks: those
    releases as specifiers)."""
    doc: dict[str, Any] = {"scanned": {t: list(h.releases) for t, h in sorted(histories.items())}}
    doc["importers"] = {}
    for package in (p for p in IMPORTERS if p in releases):
        rows: dict[str, Any] = {}
        for version in sorted(releases[package], key=Version):
            row = _row(package, releases[package][version], histories)
            if row is not None:
                rows[version] = row
        doc["importers"][package] = rows
    return doc


def _absent(have: int, count: int) -> set[int]:
    """The indices of the releases without a name, less a run the history has the name on both
    sides of (transformers 4.52.x's lazily exported model configs, ``DeepseekV3Config``: in 4.51
    and 4.53, and ``from transformers import DeepseekV3Config`` works in 4.52.4, but the history
    does not see 4.52's ``define_import_structure``): such a run is a gap in the history, not
    evidence. A name added later (a run from the first release) or removed (to the last) stays."""
    out: set[int] = set()
    i = 0
    while i < count:
        if have >> i & 1:
            i += 1
            continue
        j = i
        while j < count and not have >> j & 1:
            j += 1
        if i == 0 or j == count:
            out |= set(range(i, j))
        i = j
    return out


#: ``Version(version("transformers")) < Version("5.0.0")`` (vLLM 0.24-0.31's
#: vllm/transformers_utils/config.py, whose body raises ImportError): the target and the bound
_GATE_OPS = {ast.Lt: "<", ast.LtE: "<="}


def _version_of(node: ast.expr) -> str | None:
    """``Version(version("transformers"))`` / ``Version(transformers.__version__)`` -> the
    package; ``Version("5.0.0")`` -> ``"5.0.0"`` (a constant: returned as ``=5.0.0``)."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return f"={arg.value}"
        if isinstance(arg, ast.Call) and len(arg.args) == 1 and isinstance(arg.args[0], ast.Constant):
            return str(arg.args[0].value)  # version("transformers")
        if isinstance(arg, ast.Attribute) and arg.attr == "__version__" and isinstance(arg.value, ast.Name):
            return arg.value.id  # transformers.__version__
    return None


def version_gates(rel: Any, modules: Iterable[str], package: str) -> list[tuple[str, str, str]]:
    """``(target, module, "<5.0.0")``: a module of the closure that raises at import where the
    target is below a release (a top-level ``if Version(version("transformers")) <
    Version("5.0.0"): raise ImportError(...)``: vLLM 0.24 on refuses transformers 4 whatever
    names it has)."""
    paths = {_module_of(p)[0]: p for p in rel.files if p.startswith(f"{package}/") and p.endswith(".py")}
    out = []
    for module in modules:
        tree = rk._parse(rel.files[paths[module]]) if module in paths else None
        for s in tree.body if tree is not None else ():
            t = s.test if isinstance(s, ast.If) else None
            if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and type(t.ops[0]) in _GATE_OPS):
                continue
            target, bound = _version_of(t.left), _version_of(t.comparators[0])
            raises = any(isinstance(x, ast.Raise) for st in s.body for x in ast.walk(st))
            if raises and target in IMPORTERS[package].targets and bound and bound.startswith("="):
                out.append((target, module, _GATE_OPS[type(t.ops[0])] + bound[1:]))
    return out


#: the optional packages whose availability guard TRL's modules test at import
#: (``if is_vllm_available(): from vllm import LLM``): the guard holds whenever it is installed
WHEN_INSTALLED = {"trl": ("vllm",)}


def when_installed(rel: Any, modules: Iterable[str], package: str, optional: str) -> str | None:
    """The first import of ``optional`` a module of the closure makes at module level under its
    availability guard alone (``if is_vllm_available():``): it runs whenever ``optional`` is
    installed, used or not (``"trl.generation.vllm_client: from vllm.distributed.… import
    PyNcclCommunicator"``); None where no module does."""
    paths = {_module_of(p)[0]: p for p in rel.files if p.startswith(f"{package}/") and p.endswith(".py")}
    guard = f"is_{optional}_available"
    for module in sorted(modules):
        tree = rk._parse(rel.files[paths[module]]) if module in paths else None
        for s in tree.body if tree is not None else ():
            t = s.test if isinstance(s, ast.If) else None
            if not (isinstance(t, ast.Call) and getattr(t.func, "id", getattr(t.func, "attr", "")) == guard):
                continue
            for st in s.body:
                if (
                    isinstance(st, ast.ImportFrom)
                    and not st.level
                    and (st.module or "").split(".")[0] == optional
                ):
                    return f"{module}: from {st.module} import {', '.join(a.name for a in st.names)}"
                if isinstance(st, ast.Import) and any(a.name.split(".")[0] == optional for a in st.names):
                    return f"{module}: import {', '.join(a.name for a in st.names)}"
    return None


def _row(package: str, rel: Any, histories: Mapping[str, Any]) -> dict[str, Any] | None:
    modules, imports = closure(rel, package)
    spec = IMPORTERS[package]
    if spec.needs not in modules:
        return None  # a TRL release without GRPOTrainer (before 0.14): nothing on GRPO's path to judge
    row: dict[str, Any] = {"modules": len(modules)}
    found = {o: w for o in WHEN_INSTALLED.get(package, ()) if (w := when_installed(rel, modules, package, o))}
    if found:
        row["imports_when_installed"] = found
    gates = version_gates(rel, modules, package)
    for target in spec.targets:
        h = histories.get(target)
        mine = [(m, n) for t, m, n in imports if t == target]
        if h is None or not mine:
            continue
        lacking: dict[str, list[str]] = {}
        for _, module, bound in (g for g in gates if g[0] == target):
            below = [r for r in h.releases if Version(r) in SpecifierSet(bound)]
            if below:  # the module raises at import there: as a missing name
                lacking[f"{module}:raise if {target}{bound}"] = rk.runs(below, list(h.releases))
        unknown = 0
        for module, name in mine:
            have = _have(h, module, name)
            if not have and "." in (name or ""):
                continue  # an attribute the history never saw (set at run time): no evidence
            if not have:
                unknown += 1  # in no scanned release (a lazy name the history misses): no evidence
                continue
            absent = _absent(have, len(h.releases))
            missing = [r for i, r in enumerate(h.releases) if i in absent]
            if missing:
                key = f"{module}:{name}" if name else module
                lacking[key] = rk.runs(missing, list(h.releases))
        entry: dict[str, Any] = {"names": len(mine)}
        if unknown:
            entry["unknown"] = unknown
        if lacking:
            entry["lacking"] = lacking
        row[target] = entry
    return row


def floor(lacking: Mapping[str, list[str]], scanned: list[str]) -> str | None:
    """The API floor a row's ``lacking`` sets: the first scanned release after every release that
    lacks a name, where those releases are all below it (a name added later); None where no
    release lacks one, or a name is lacking above a release that has it (a removal: no floor)."""
    low = [
        i
        for i, r in enumerate(scanned)
        if any(Version(r) in SpecifierSet(s) for v in lacking.values() for s in v)
    ]
    if not low or low != list(range(len(low))) or len(low) == len(scanned):
        return None
    return scanned[len(low)]


def floors(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The floors document: per importer with an undeclared target, its scanned releases and per
    target each release's API floor (None: every scanned release of the target has its names)."""
    out: dict[str, Any] = {}
    for package, rows in (doc.get("importers") or {}).items():
        for optional in WHEN_INSTALLED.get(package, ()):
            table = {r: (row.get("imports_when_installed") or {}).get(optional) for r, row in rows.items()}
            out.setdefault("at_import", {}).setdefault(package, {})[optional] = table
        targets = [t for t in UNDECLARED if t in IMPORTERS[package].targets and t in doc["scanned"]]
        if not targets:
            continue
        entry: dict[str, Any] = {"releases": list(rows)}
        for target in targets:
            entry[target] = {
                release: floor((row.get(target) or {}).get("lacking") or {}, doc["scanned"][target])
                for release, row in rows.items()
                if target in row
            }
        out.setdefault("floors", {})[package] = entry
    return out


def render_floors(doc: dict[str, Any], today: str) -> str:
    head = (
        "# Generated by scripts/derive_requirement_api.py -- edit the script, not this file.\n"
        "# The API floor of a requirement an importer does not declare (TRL's torch), from\n"
        "# requirement_api.yaml: per scanned release, the first release of the target from which every\n"
        "# name GRPO's path imports from it is there (null: every scanned release has them). The static\n"
        "# check reads this small file on every run (PKG004), the names themselves only on a finding.\n"
        "# at_import: per release, the import of an optional package (vLLM) a module of GRPO's path\n"
        "# makes under its availability guard alone (`if is_vllm_available():`): whenever it is\n"
        "# installed, `from trl import GRPOTrainer` imports it, use_vllm on or off.\n"
    )
    body = {
        "schema": "envdoctor.knowledge/1",
        "generated_by": "scripts/derive_requirement_api.py",
        "checked": today,
        **floors(doc),
    }
    return head + rk._dump(body)


def render(doc: dict[str, Any], today: str) -> str:
    head = (
        "# Generated by scripts/derive_requirement_api.py -- edit the script, not this file.\n"
        "# The names each TRL release imports from transformers / accelerate / datasets and torch\n"
        "# (which it does not declare) at module level,\n"
        "# unconditionally, in the modules `from trl import GRPOTrainer` loads (its wheel read with ast),\n"
        "# and each vLLM release from transformers in the modules `import vllm`, `vllm.LLM` and the\n"
        "# engine's start load (not a model architecture's own module),\n"
        "# checked against the requirement's symbol history (rules/knowledge/symbols/). `lacking`: a\n"
        "# name and the scanned releases of the requirement without it (an ImportError at start).\n"
        "# PKG004 reads it to judge an unmet floor (rules/knowledge/requirements.yaml).\n"
    )
    body = {
        "schema": "envdoctor.knowledge/1",
        "generated_by": "scripts/derive_requirement_api.py",
        "checked": today,
        **doc,
    }
    return head + rk._dump(body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--cache",
        type=Path,
        required=True,
        help="the wheel cache (CACHE/trl/trl-X-*.whl, CACHE/vllm/vllm-X-*.whl)",
    )
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file would change")
    args = ap.parse_args(argv)
    from envdoctor.knowledge.symbol_history import history

    releases: dict[str, dict[str, Any]] = {}
    for package in IMPORTERS:
        found = releases.setdefault(package, {})
        for whl in sorted((args.cache / package).glob(f"{package}-*.whl")):
            version = whl.name.split("-")[1]
            found.setdefault(version, rk.read_wheel(package, version, whl))
    wanted = {t for spec in IMPORTERS.values() for t in spec.targets}
    histories = {t: h for t in sorted(wanted) if (h := history(t)) is not None}
    path = ROOT / "rules" / "knowledge" / OUT
    old = path.read_text() if path.is_file() else None
    doc = derive({p: r for p, r in releases.items() if r}, histories)
    kept = keep_rows(doc, old, [p for p, r in releases.items() if not r])
    today = dt.date.today().isoformat()
    new = render(doc, today)
    fpath = ROOT / "rules" / "knowledge" / FLOORS
    fold = fpath.read_text() if fpath.is_file() else None
    fnew = render_floors(doc, today)

    def body(text: str | None) -> str | None:
        return (
            None
            if text is None
            else "\n".join(ln for ln in text.splitlines() if not ln.startswith("checked:"))
        )

    for p in kept:
        print(f"no {p} wheel in {args.cache / p}: its rows kept from {path.name}")
    same = body(old) == body(new) and body(fold) == body(fnew)
    if args.check:
        print("unchanged" if same else f"{path} or {fpath} would change")
        return 0 if same else 1
    if not same:
        path.write_text(new)
        fpath.write_text(fnew)
        print(f"wrote {path}, {fpath}: " + ", ".join(f"{len(r)} {p} releases" for p, r in releases.items()))
    return 0


def keep_rows(doc: dict[str, Any], old: str | None, packages: list[str]) -> list[str]:
    """An importer with no wheel in the cache (vLLM's ~400 MB wheels, not kept offline) keeps its
    rows from the current file, with the scanned releases of its targets they were judged
    against; the importers kept."""
    import yaml

    prior = yaml.safe_load(old) if old else None
    kept = []
    for package in packages:
        rows = ((prior or {}).get("importers") or {}).get(package)
        if not rows:
            continue
        doc["importers"][package] = rows
        for target in IMPORTERS[package].targets:
            if target in (prior.get("scanned") or {}) and target not in doc["scanned"]:
                doc["scanned"][target] = prior["scanned"][target]
        kept.append(package)
    return kept


if __name__ == "__main__":
    raise SystemExit(main())
