#!/usr/bin/env python3
"""Refresh envdoctor's version knowledge from the release wheels of TRL and vLLM (maintainer command).

For every TRL release (>= 0.14.0) and every vLLM release (>= 0.7.2) it fetches the wheel with
``pip download --no-deps`` into a cache folder you name (outside the repository; nothing is
installed, nothing is imported) and reads, with ``zipfile`` and ``ast``:

* TRL: the ``vllm`` extra's Requires-Dist, the vLLM range ``trl/import_utils.py`` checks at import
  time, GRPOConfig's fields (``trl/trainer/grpo_config.py`` / ``base_config.py``), and every use of
  vLLM in TRL's files: ``from vllm… import`` (module and name, with the vLLM version guard around it),
  attributes of imported vLLM classes, ``LLM(...)`` / ``SamplingParams(...)`` keywords, the flags of
  the ``vllm serve`` line TRL builds, the server routes TRL's client calls;
* vLLM: which modules exist, which names each defines, the parameters of ``LLM`` / ``EngineArgs`` /
  ``SamplingParams``, the server's flags and routes;

then checks each TRL release's uses against each vLLM release (the API matrix) and writes:

* ``rules/knowledge/vllm_api.yaml``: the matrix's breaks, and the ones inside TRL's declared range;
* ``rules/knowledge/known_failures/trl_vllm_api_derived.yaml``: one catalogue entry per break on
  GRPO's path inside TRL's declared range (``check`` reports it; triage reads its symptom);
* ``rules/knowledge/grpo_config_keys.yaml`` (via scripts/derive_grpo_config_keys.py);
* ``rules/knowledge/trl.yaml``: a ``trl_lines`` entry for a TRL minor release it lacks (curated
  lines are never rewritten; a derived range that differs from a curated one is reported);
* ``rules/knowledge/horizon.yaml``: the newest release of each stack package and its upload date.

Usage:
    python scripts/refresh_knowledge.py --cache ~/envdoctor-wheels            # write
    python scripts/refresh_knowledge.py --cache ~/envdoctor-wheels --check    # report, write nothing

A vLLM wheel (~300-400 MB) is deleted once its ``.py`` files are kept in ``vllm-X.src.zip`` in the
cache (~12 MB); later runs download only releases whose extract is missing (``--keep-wheels`` keeps
them). ``--check`` exits 1 when a file would change. Needs network (pip, the index's JSON simple API);
envdoctor itself never runs this.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import difflib
import importlib.util
import itertools
import json
import re
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
HORIZON_PACKAGES = ("trl", "vllm", "transformers", "torch", "accelerate", "deepspeed", "peft")
TRL_MIN, VLLM_MIN = Version("0.14.0"), Version("0.7.2")
TRL_URL = "https://github.com/huggingface/trl/blob/v{v}/{path}"
PYPI_URL = "https://pypi.org/project/{pkg}/{v}/"
DERIVED_FILE = "known_failures/trl_vllm_api_derived.yaml"
ROUTE_RE = re.compile(r"[\"'](/[\w/{}.\-]*)[\"']")

# --------------------------------------------------------------------------------------------
# The index and the wheels (the only network access; tests replace these two functions)


def index_releases(name: str) -> dict[str, str]:
    """Final releases of ``name`` on the index -> upload date (YYYY-MM-DD, the earliest file)."""
    req = urllib.request.Request(
        f"https://pypi.org/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 (an https URL built here)
        data = json.load(resp)
    dates: dict[str, str] = {}
    for f in data.get("files", []):
        m = re.match(rf"^{re.escape(name).replace('_', '[-_]')}-([^-]+)(?:-|\.tar)", f["filename"], re.I)
        if not m or f.get("yanked"):
            continue
        try:
            v = Version(m.group(1))
        except InvalidVersion:
            continue
        if v.is_prerelease or v.is_devrelease or v.local:
            continue
        when = str(f.get("upload-time") or "")[:10]
        key = str(v)
        if when and (key not in dates or when < dates[key]):
            dates[key] = when
    return dates


def download_wheel(name: str, version: str, dest: Path) -> Path:
    """``pip download --no-deps`` one release's wheel into ``dest``; its path."""
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.glob("*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(dest),
            f"{name}=={version}",
        ],
        check=True,
    )
    new = sorted(set(dest.glob("*.whl")) - before) or sorted(dest.glob(f"{name}-{version}-*.whl"))
    if not new:
        raise RuntimeError(f"pip download {name}=={version}: no wheel in {dest}")
    return new[0]


# --------------------------------------------------------------------------------------------
# One release's files


@dataclass
class Release:
    """The ``.py`` files (and METADATA) of one release's wheel; ``names``: every file in it."""

    package: str
    version: str
    files: Mapping[str, str]
    names: set[str]
    metadata: str = ""
    built: str | None = None  # the dist-info's timestamp (YYYY-MM-DD), a fallback for the date

    def module_path(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for cand in (f"{base}.py", f"{base}/__init__.py"):
            if cand in self.names:
                return cand
        if any(n.startswith(base + ".") and n.endswith((".so", ".pyd")) for n in self.names):
            return base + ".so"
        if any(n.startswith(base + "/") for n in self.names):
            return base + "/"  # a namespace package
        return None


class _ZipFiles(Mapping[str, str]):
    """A wheel's (or extract's) ``.py`` files, read from the zip on first use."""

    def __init__(self, path: Path, names: Iterable[str]) -> None:
        self._zip = zipfile.ZipFile(path)
        self._names = sorted(n for n in names if n.endswith(".py") and n != "__metadata__.py")
        self._known = set(self._names)
        self._cache: dict[str, str] = {}

    def __getitem__(self, key: str) -> str:
        if key not in self._known:
            raise KeyError(key)
        if key not in self._cache:
            self._cache[key] = self._zip.read(key).decode("utf-8", "replace")
        return self._cache[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def read_wheel(package: str, version: str, wheel: Path) -> Release:
    """A release from its wheel or extract (files read lazily)."""
    metadata, built = "", None
    with zipfile.ZipFile(wheel) as zf:
        infos = zf.infolist()
        names = {i.filename for i in infos}
        for info in infos:
            if info.filename.endswith(".dist-info/METADATA") or info.filename == "__metadata__.py":
                metadata = zf.read(info).decode("utf-8", "replace")
                built = "{:04d}-{:02d}-{:02d}".format(*info.date_time[:3])
        listed = (
            set(zf.read("__files__.txt").decode().split("\n")) - {""} if "__files__.txt" in names else names
        )
    files = _ZipFiles(wheel, [n for n in names if n in listed or n.endswith(".py")])
    return Release(package, version, files, listed, metadata, built)


def extract_sources(wheel: Path, out: Path) -> None:
    """Keep a wheel's ``.py`` files, METADATA and file list in a small zip (``out``)."""
    with zipfile.ZipFile(wheel) as zf, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as oz:
        names = zf.namelist()
        oz.writestr("__files__.txt", "\n".join(names))
        for info in zf.infolist():
            if info.filename.endswith(".py"):
                oz.writestr(info, zf.read(info))
            elif info.filename.endswith(".dist-info/METADATA"):
                oz.writestr(zipfile.ZipInfo("__metadata__.py", info.date_time), zf.read(info))


def fetch_release(
    package: str, version: str, cache: Path, keep_wheels: bool, download: Callable[[str, str, Path], Path]
) -> Release:
    """The release's files, from the cache's extract or wheel, else downloaded (and the vLLM wheel
    then reduced to its extract)."""
    folder = cache / package
    extract = folder / f"{package}-{version}.src.zip"
    if extract.is_file():
        return read_wheel(package, version, extract)
    wheels = sorted(folder.glob(f"{package}-{version}-*.whl"))
    wheel = wheels[0] if wheels else download(package, version, folder)
    if package == "vllm":
        extract_sources(wheel, extract)
        if not keep_wheels:
            wheel.unlink()
        return read_wheel(package, version, extract)
    return read_wheel(package, version, wheel)


# --------------------------------------------------------------------------------------------
# TRL: declared ranges


def extra_range(metadata: str, extra: str = "vllm", target: str = "vllm") -> str | None:
    """The specifier the ``extra`` puts on ``target`` (METADATA Requires-Dist); "" if unbounded."""
    found = None
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        try:
            req = Requirement(line.split(":", 1)[1].strip())
        except Exception:
            continue
        if req.name.lower() != target or req.marker is None:
            continue
        if req.marker.evaluate({"extra": extra}) and not req.marker.evaluate({"extra": ""}):
            found = str(req.specifier)
    return found


def _version_literal(node: ast.AST, consts: dict[str, str]) -> str | None:
    """ "0.10.2" from Version("0.10.2") / version.parse("0.10.2") / a module constant."""
    if isinstance(node, ast.Call) and node.args and _call_name(node) in {"Version", "parse"}:
        node = node.args[0]
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.match(r"^\d+(\.\d+)+$", node.value)
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    return None


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


FLIP = {ast.Lt: ">", ast.LtE: ">=", ast.Gt: "<", ast.GtE: "<="}
SAME = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def import_time_range(src: str | None) -> str | None:
    """The vLLM range ``is_vllm_available`` of trl/import_utils.py warns outside of."""
    if not src:
        return None
    tree = ast.parse(src)
    consts = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    fn = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "is_vllm_available"), None
    )
    if fn is None:
        return None
    parts: list[str] = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Compare):
            continue
        items = [node.left, *node.comparators]
        for (a, b), op in zip(itertools.pairwise(items), node.ops, strict=True):
            va, vb = _version_literal(a, consts), _version_literal(b, consts)
            if type(op) not in SAME or (va is None) == (vb is None):
                continue
            if "min_version" in ast.unparse(a) + ast.unparse(b):
                continue  # the caller's own minimum, not the supported range
            spec = f"{FLIP[type(op)]}{va}" if va else f"{SAME[type(op)]}{vb}"
            if spec not in parts:
                parts.append(spec)
    return ",".join(parts) or None


# --------------------------------------------------------------------------------------------
# TRL: the vLLM API it uses


@dataclass(frozen=True)
class Use:
    """One use of vLLM's API in a TRL file, valid for the vLLM versions in ``guard``."""

    kind: str  # module | name | attribute | llm-kwarg | sampling-kwarg | serve-flag | endpoint
    api: str  # vllm.x.y / vllm.x.y:Name / vllm.x.y:Class.attr / keyword / --flag / /route
    file: str
    line: int
    guard: str = ""  # a vLLM specifier, "" for every version
    soft: bool = False  # inside try/except ImportError: TRL copes without it


def _guard_of(test: ast.AST, named: dict[str, str]) -> str | None:
    """The vLLM specifier an ``if`` test states (None if it says nothing about vLLM's version)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _guard_of(test.operand, named)
        return _negate(inner) if inner else None
    if isinstance(test, ast.Name) and test.id in named:
        return named[test.id]
    if isinstance(test, ast.Call) and _call_name(test) == "is_vllm_available":
        arg = (
            test.args[0]
            if test.args
            else next((k.value for k in test.keywords if k.arg == "min_version"), None)
        )
        v = _version_literal(arg, {}) if arg is not None else None
        return f">={v}" if v else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right, op = test.left, test.comparators[0], test.ops[0]
        if type(op) not in SAME or "vllm" not in ast.unparse(test).lower():
            return None
        vr, vl = _version_literal(right, {}), _version_literal(left, {})
        if vr and not vl:
            return f"{SAME[type(op)]}{vr}"
        if vl and not vr:
            return f"{FLIP[type(op)]}{vl}"
    return None


def _negate(spec: str) -> str | None:
    m = re.match(r"^(>=|<=|>|<)(.+)$", spec)
    if not m or "," in spec:
        return None
    return {">=": "<", "<=": ">", ">": "<=", "<": ">="}[m.group(1)] + m.group(2)


def _and(a: str, b: str | None) -> str:
    return ",".join(p for p in (a, b) if p)


class _TrlScan(ast.NodeVisitor):
    def __init__(self, path: str, own_routes: frozenset[str] = frozenset()) -> None:
        self.path = path
        self.own_routes = own_routes
        self.uses: list[Use] = []
        self.guard = ""
        self.soft = False
        self.named: dict[str, str] = {}  # NAME = is_vllm_available(min_version=...) -> spec
        self.vllm_names: dict[str, str] = {}  # local name -> "vllm.mod:Name" (or "vllm.mod" for modules)
        self.dicts: dict[str, list[tuple[str, str, int]]] = {}  # var -> [(key, guard, line)]

    def use(self, kind: str, api: str, node: ast.AST) -> None:
        self.uses.append(Use(kind, api, self.path, getattr(node, "lineno", 0), self.guard, self.soft))

    def visit_If(self, node: ast.If) -> None:
        spec = _guard_of(node.test, self.named)
        outer = self.guard
        self.guard = _and(outer, spec)
        for n in node.body:
            self.visit(n)
        self.guard = _and(outer, _negate(spec) if spec else None)
        for n in node.orelse:
            self.visit(n)
        self.guard = outer

    def visit_Try(self, node: ast.Try) -> None:
        catches = {ast.unparse(h.type) if h.type else "" for h in node.handlers}
        soft = bool(
            catches & {"", "ImportError", "ModuleNotFoundError", "Exception", "(ImportError, AttributeError)"}
        ) or any("ImportError" in c for c in catches)
        outer = self.soft
        self.soft = outer or soft
        for n in node.body:
            self.visit(n)
        self.soft = outer
        for n in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(n)

    visit_TryStar = visit_Try  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> None:
        if (
            isinstance(node.value, ast.Call)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            spec = _guard_of(node.value, {})
            if spec:
                self.named[node.targets[0].id] = spec
        for t in node.targets:
            if isinstance(t, ast.Name) and isinstance(node.value, (ast.Dict, ast.Call)):
                keys = _dict_keys(node.value)
                if keys is not None:
                    self.dicts[t.id] = [(k, self.guard, node.lineno) for k in keys]
            if (
                isinstance(t, ast.Subscript)
                and isinstance(t.value, ast.Name)
                and isinstance(t.slice, ast.Constant)
                and isinstance(t.slice.value, str)
                and t.value.id in self.dicts
            ):
                self.dicts[t.value.id].append((t.slice.value, self.guard, node.lineno))
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name == "vllm" or a.name.startswith("vllm."):
                self.use("module", a.name, node)
                self.vllm_names[(a.asname or a.name).split(".")[0]] = "vllm" if not a.asname else a.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level or not (mod == "vllm" or mod.startswith("vllm.")):
            return
        self.use("module", mod, node)
        for a in node.names:
            if a.name != "*":
                self.use("name", f"{mod}:{a.name}", node)
                self.vllm_names[a.asname or a.name] = f"{mod}:{a.name}"

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and ":" in self.vllm_names.get(node.value.id, ""):
            self.use("attribute", f"{self.vllm_names[node.value.id]}.{node.attr}", node)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        """A route the client calls as f"{…base_url}/route" that TRL's own server does not define."""
        for a, b in itertools.pairwise(node.values):
            if (
                isinstance(a, ast.FormattedValue)
                and "base_url" in ast.unparse(a.value)
                and isinstance(b, ast.Constant)
            ):
                route = _norm_route(str(b.value).split("?")[0])
                if route not in self.own_routes and re.match(r"^/[\w/\-.]+$", route):
                    self.use("endpoint", route, node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        target = self._callee(node)
        kind = {
            "vllm:LLM": "llm-kwarg",
            "vllm.entrypoints.llm:LLM": "llm-kwarg",
            "vllm:SamplingParams": "sampling-kwarg",
            "vllm.sampling_params:SamplingParams": "sampling-kwarg",
        }.get(target or "")
        if kind:
            for kw in node.keywords:
                if kw.arg:
                    self.use(kind, kw.arg, kw.value)
                elif isinstance(kw.value, ast.Name):
                    outer = self.guard
                    for key, guard, line in self.dicts.get(kw.value.id, []):
                        self.guard = _and(outer, guard)
                        self.uses.append(Use(kind, key, self.path, line, self.guard, self.soft))
                    self.guard = outer
                elif isinstance(kw.value, ast.Dict):
                    for key in _dict_keys(kw.value) or []:
                        self.use(kind, key, kw.value)
        self.generic_visit(node)

    def _callee(self, node: ast.Call) -> str | None:
        f = node.func
        if isinstance(f, ast.Name):
            return self.vllm_names.get(f.id)
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and self.vllm_names.get(f.value.id) == "vllm"
        ):
            return f"vllm:{f.attr}"
        return None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        saved = dict(self.dicts)
        self.generic_visit(node)
        self.dicts = saved

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]


def _dict_keys(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [k.arg for k in node.keywords if k.arg]
    return None


def _route_strings(tree: ast.AST, *, decorators_only: bool) -> set[str]:
    """Route paths: constants starting with "/" in decorator calls (or anywhere)."""
    out: set[str] = set()
    nodes: Iterable[ast.AST]
    if decorators_only:
        nodes = [
            d
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            for d in n.decorator_list
        ]
        nodes = [x for d in nodes for x in ast.walk(d)]
        nodes = [
            *nodes,
            *(
                x
                for n in ast.walk(tree)
                if isinstance(n, ast.Call) and _call_name(n) == "add_api_route"
                for x in n.args[:1]
            ),
        ]
    else:
        nodes = list(ast.walk(tree))
    for n in nodes:
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and re.match(r"^/[\w/{}.\-]*$", n.value):
            out.add(_norm_route(n.value))
    return out


_TREES: dict[int, ast.Module | None] = {}


def _parse(src: str) -> ast.Module | None:
    """``ast.parse``, once per distinct source text (TRL's files repeat across releases)."""
    key = hash(src)
    if key not in _TREES:
        try:
            _TREES[key] = ast.parse(src)
        except SyntaxError:
            _TREES[key] = None
    return _TREES[key]


def _norm_route(path: str) -> str:
    return path.rstrip("/") or "/"


def trl_uses(rel: Release) -> list[Use]:
    """Every use of vLLM's API in one TRL release's files."""
    uses: list[Use] = []
    own_routes: set[str] = set()
    trees: dict[str, ast.AST] = {}
    for path, src in sorted(rel.files.items()):
        if not path.startswith("trl/") or "/tests/" in path:
            continue
        if not any(word in src for word in ("vllm", "base_url", "@app.")):
            continue  # nothing of vLLM's API, the client's routes or TRL's own server here
        tree = _parse(src)
        if tree is None:
            continue
        trees[path] = tree
        own_routes |= _route_strings(tree, decorators_only=True)
    for path, tree in trees.items():
        key = (path, hash(rel.files[path]), frozenset(own_routes))
        if key not in _SCANNED:
            scan = _TrlScan(path, frozenset(own_routes))
            scan.visit(tree)
            _SCANNED[key] = scan.uses + _serve_flags(path, tree)
        uses += _SCANNED[key]
    return uses


_SCANNED: dict[tuple[str, int, frozenset[str]], list[Use]] = {}  # a file's uses, by its content


def _serve_flags(path: str, tree: ast.AST) -> list[Use]:
    """The flags of a ``vllm serve`` command line built as a list of strings in a TRL file."""
    consts = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    if not any(c.value == "serve" for c in consts) or not any(
        c.value == "vllm" or c.value.endswith("vllm.entrypoints.cli.main") for c in consts
    ):
        return []
    scan = _GuardedConstants(path)
    scan.visit(tree)
    return [u for u in scan.uses if u.kind == "serve-flag"]


class _GuardedConstants(_TrlScan):
    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and re.match(r"^--[a-z][a-z0-9\-_]*$", node.value):
            self.use("serve-flag", node.value, node)


# --------------------------------------------------------------------------------------------
# vLLM: what a release provides


@dataclass
class VllmApi:
    version: str
    rel: Release
    _trees: dict[str, ast.Module | None] = field(default_factory=dict)
    _llm: set[str] | None = None
    _sampling: set[str] | None = None
    _flags: set[str] | None = None
    _routes: set[str] | None = None
    _memo: dict[tuple[str, str], bool | None] = field(default_factory=dict)

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            src = self.rel.files.get(path)
            try:
                self._trees[path] = ast.parse(src) if src is not None else None
            except SyntaxError:
                self._trees[path] = None
        return self._trees[path]

    def defines(self, module: str, name: str, depth: int = 0) -> bool | None:
        """Whether ``from module import name`` works (None: cannot tell from the source)."""
        path = self.rel.module_path(module)
        if path is None:
            return False
        if not path.endswith(".py"):
            return None
        if self.rel.module_path(f"{module}.{name}") is not None:
            return True  # a submodule
        tree = self.tree(path)
        if tree is None:
            return None
        bound, star, lazy = _top_level_names(tree, module, path.endswith("__init__.py"))
        if name in bound:
            return True
        if lazy and any(isinstance(n, ast.Constant) and n.value == name for n in ast.walk(tree)):
            return True
        if depth < 3:
            for src_mod in star:
                if self.defines(src_mod, name, depth + 1):
                    return True
        return None if (lazy or star) else False

    def class_has(self, module: str, cls: str, attr: str, depth: int = 0) -> bool | None:
        path = self.rel.module_path(module)
        tree = self.tree(path) if path and path.endswith(".py") else None
        if tree is None or depth > 4:
            return None
        node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
        is_pkg = bool(path and path.endswith("__init__.py"))
        if node is None:
            imported = _imported_from(tree, module, is_pkg, cls)
            return self.class_has(imported[0], imported[1], attr, depth + 1) if imported else None
        if attr in _class_members(node):
            return True
        unknown = False
        for base in node.bases:
            bname = ast.unparse(base).split("[")[0]
            if bname in {"object", "ABC", "Generic", "Protocol"}:
                continue
            local = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == bname), None)
            where = (module, bname) if local else _imported_from(tree, module, is_pkg, bname)
            got = self.class_has(where[0], where[1], attr, depth + 1) if where else None
            if got:
                return True
            unknown = unknown or got is None
        return None if unknown else False

    def llm_params(self) -> set[str]:
        if self._llm is None:
            params = _init_params(self.tree("vllm/entrypoints/llm.py"), "LLM")
            if params is None:
                self._llm = set()
            else:
                names, var_kw = params
                if var_kw:
                    names |= self._engine_fields()
                self._llm = names
        return self._llm

    def _engine_fields(self) -> set[str]:
        tree = self.tree("vllm/engine/arg_utils.py")
        out: set[str] = set()
        if tree is not None:
            for cls in ("EngineArgs", "AsyncEngineArgs"):
                node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
                if node is not None:
                    out |= _class_members(node)
        return out

    def sampling_params(self) -> set[str]:
        if self._sampling is None:
            tree = self.tree("vllm/sampling_params.py")
            node = (
                next(
                    (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SamplingParams"), None
                )
                if tree
                else None
            )
            names: set[str] = set()
            if node is not None:
                names = {
                    n.target.id
                    for n in node.body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                }
                init = _init_params(tree, "SamplingParams")
                if init:
                    names |= init[0]
            self._sampling = names
        return self._sampling

    def serve_flags(self) -> set[str]:
        if self._flags is None:
            flags = {"--" + f.replace("_", "-") for f in self._engine_fields()}
            for path, src in self.rel.files.items():
                if not path.startswith(
                    ("vllm/entrypoints/", "vllm/engine/arg_utils.py", "vllm/config/", "vllm/utils/")
                ):
                    continue
                flags |= {m.replace("_", "-") for m in re.findall(r"[\"'](--[a-z][a-z0-9_\-]*)[\"']", src)}
                if "cli_args" in path or "serve" in path:
                    tree = self.tree(path)
                    for node in ast.walk(tree) if tree else []:
                        if isinstance(node, ast.ClassDef) and node.name.endswith("Args"):
                            flags |= {"--" + f.replace("_", "-") for f in _class_members(node)}
            self._flags = flags
        return self._flags

    def routes(self) -> set[str]:
        if self._routes is None:
            out: set[str] = set()
            for path in self.rel.files:
                if path.startswith("vllm/entrypoints/"):
                    for m in ROUTE_RE.finditer(self.rel.files[path]):
                        out.add(_norm_route(m.group(1)))
            self._routes = out
        return self._routes

    def check(self, use: Use) -> bool | None:
        """Whether this vLLM release has what ``use`` needs (None: cannot tell), memoised."""
        key = (use.kind, use.api)
        if key not in self._memo:
            self._memo[key] = self._check(use)
        return self._memo[key]

    def _check(self, use: Use) -> bool | None:
        if use.kind == "module":
            return self.rel.module_path(use.api) is not None
        if use.kind == "name":
            mod, name = use.api.split(":")
            return self.defines(mod, name)
        if use.kind == "attribute":
            target, attr = use.api.rsplit(".", 1)
            mod, cls = target.split(":")
            if self.rel.module_path(f"{mod}.{cls}") is not None:
                return None  # an attribute of a submodule: not a class
            return self.class_has(mod, cls, attr)
        if use.kind == "llm-kwarg":
            known = self.llm_params()
            return (use.api in known) if known else None
        if use.kind == "sampling-kwarg":
            known = self.sampling_params()
            return (use.api in known) if known else None
        if use.kind == "serve-flag":
            flag = use.api.replace("_", "-")
            known = self.serve_flags()
            return flag in known or (flag.startswith("--no-") and "--" + flag[5:] in known)
        if use.kind == "endpoint":
            return use.api in self.routes()
        return None


def _top_level_names(tree: ast.Module, module: str, is_pkg: bool) -> tuple[set[str], list[str], bool]:
    """Names a module binds at top level (in if/try blocks too), its ``import *`` sources, and
    whether it has a module ``__getattr__`` (lazy exports)."""
    bound: set[str] = set()
    star: list[str] = []
    lazy = False
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
            lazy = lazy or n.name == "__getattr__"
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                for x in ast.walk(t):
                    if isinstance(x, ast.Name):
                        bound.add(x.id)
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)) and isinstance(n.target, ast.Name):
            bound.add(n.target.id)
        elif isinstance(n, ast.Import):
            bound |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            for a in n.names:
                if a.name == "*":
                    star.append(_resolve(module, is_pkg, n.level, n.module))
                else:
                    bound.add(a.asname or a.name)
        elif isinstance(n, (ast.If, ast.Try, ast.With)) or type(n).__name__ == "TryStar":
            for block in ("body", "orelse", "finalbody", "handlers"):
                for x in getattr(n, block, []):
                    stack.extend(x.body if isinstance(x, ast.ExceptHandler) else [x])
    return bound, [s for s in star if s], lazy


def _resolve(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    """The absolute module of ``from <level dots><name> import``, seen from ``module``."""
    if not level:
        return name or ""
    parts = module.split(".")
    keep = len(parts) - level + (1 if is_pkg else 0)
    base = ".".join(parts[: max(keep, 0)])
    return f"{base}.{name}" if name else base


def _imported_from(tree: ast.Module, module: str, is_pkg: bool, name: str) -> tuple[str, str] | None:
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            for a in n.names:
                if (a.asname or a.name) == name:
                    mod = _resolve(module, is_pkg, n.level, n.module)
                    return (mod, a.name) if mod.startswith("vllm") else None
    return None


def _class_members(node: ast.ClassDef) -> set[str]:
    out: set[str] = set()
    for n in node.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        elif isinstance(n, ast.Assign):
            out |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return out


def _init_params(tree: ast.Module | None, cls: str) -> tuple[set[str], bool] | None:
    node = (
        next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree else None
    )
    init = (
        next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if node
        else None
    )
    if init is None:
        return None
    a = init.args
    names = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} - {"self"}
    return names, a.kwarg is not None


# --------------------------------------------------------------------------------------------
# The matrix


def on_grpo_path(path: str) -> bool:
    """A TRL file a GRPO run imports (not experimental, not another trainer's module)."""
    if (
        path.startswith("trl/experimental/")
        or path.startswith("trl/scripts/")
        and not path.endswith("vllm_serve.py")
    ):
        return False
    m = re.match(r"^trl/trainer/(\w+)_(trainer|config)\.py$", path)
    return not m or m.group(1) == "grpo"


def _sorted(vs: Iterable[str]) -> list[str]:
    return sorted(set(vs), key=Version)


def runs(chosen: Iterable[str], scanned: list[str]) -> list[str]:
    """Consecutive runs of ``chosen`` among ``scanned`` as specifiers (the last run open-ended
    when it reaches the newest scanned release)."""
    chosen = set(chosen)
    out, start, prev = [], None, None
    for v in scanned + [None]:  # type: ignore[list-item]
        if v is not None and v in chosen:
            start = start or v
            prev = v
            continue
        if start is not None:
            if prev == scanned[-1]:
                out.append(f">={start}")
            else:
                out.append(f"=={start}" if start == prev else f">={start},<={prev}")
            start = None
    return out


def derive_matrix(
    trls: dict[str, Release], vllms: dict[str, Release], declared: dict[str, str | None]
) -> dict[str, Any]:
    """Each TRL release's vLLM uses checked against each vLLM release."""
    tv, vv = _sorted(trls), _sorted(vllms)
    apis = {v: VllmApi(v, vllms[v]) for v in vv}
    broken: dict[tuple[str, str, str], dict[str, set[str]]] = {}
    uses_per_trl: dict[str, int] = {}
    for t in tv:
        uses = trl_uses(trls[t])
        uses_per_trl[t] = len({(u.kind, u.api) for u in uses})
        for u in uses:
            if u.soft:
                continue
            spec = SpecifierSet(u.guard) if u.guard else None
            for v in vv:
                if spec is not None and Version(v) not in spec:
                    continue
                if apis[v].check(u) is False:
                    broken.setdefault((u.kind, u.api, u.file), {}).setdefault(t, set()).add(v)
    breaks = []
    for (kind, api, path), per_trl in sorted(broken.items()):
        groups: list[tuple[list[str], frozenset[str]]] = []
        for t in tv:
            vs = frozenset(per_trl.get(t, ()))
            if groups and groups[-1][1] == vs and tv.index(groups[-1][0][-1]) == tv.index(t) - 1:
                groups[-1][0].append(t)
            else:
                groups.append(([t], vs))
        for ts, vs in groups:
            if not vs:
                continue
            inside = {
                v
                for v in vs
                if any(declared.get(t) and Version(v) in SpecifierSet(str(declared[t])) for t in ts)
            }
            row = {
                "kind": kind,
                "api": api,
                "trl_file": path,
                "on_grpo_path": on_grpo_path(path),
                "trl": _trl_range(ts, tv),
                "vllm": runs(vs, vv),
            }
            if inside:
                row["inside_declared_range"] = runs(inside, vv)
            row["source"] = TRL_URL.format(v=ts[-1], path=path)
            breaks.append(row)
    return {"trl_scanned": tv, "vllm_scanned": vv, "uses_per_trl": uses_per_trl, "breaks": breaks}


def _trl_range(ts: list[str], scanned: list[str]) -> str:
    first, last = ts[0], ts[-1]
    i = scanned.index(last)
    nxt = scanned[i + 1] if i + 1 < len(scanned) else None
    return f">={first},<{nxt}" if nxt else f">={first}"


# --------------------------------------------------------------------------------------------
# Writing the knowledge


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110)


def matrix_yaml(matrix: dict[str, Any], today: str) -> str:
    head = (
        "# Generated by scripts/refresh_knowledge.py -- edit the script, not this file.\n"
        "# TRL's uses of vLLM's API (imports, names, class attributes, LLM(...) and SamplingParams(...)\n"
        "# keywords, `vllm serve` flags, server routes) read in every TRL wheel and checked against every\n"
        "# vLLM wheel (ast; nothing imported). A row: these TRL releases need `api`, which these vLLM\n"
        "# releases lack; inside_declared_range: the part TRL's own declared vLLM range admits.\n"
    )
    doc = {
        "schema": "envdoctor.knowledge/1",
        "generated_by": "scripts/refresh_knowledge.py",
        "checked": today,
    }
    doc.update({k: matrix[k] for k in ("trl_scanned", "vllm_scanned", "breaks")})
    return head + _dump(doc)


def _symptom(kind: str, api: str) -> str:
    """How the break reads in a log (Python's and msgspec's messages), as a catalogue symptom."""
    mod, _, rest = api.partition(":")
    name = rest.rsplit(".", 1)[-1] if rest else api
    if kind == "module":
        return f"No module named '{api}'"
    if kind == "name":
        return f"re:cannot import name '{re.escape(name)}' from '{re.escape(mod)}'"
    if kind == "attribute":
        return f"re:has no attribute '{re.escape(name)}'"
    if kind in ("llm-kwarg", "sampling-kwarg"):
        return f"re:(?i)unexpected keyword argument '{re.escape(name)}'"
    if kind == "serve-flag":
        return f"re:unrecognized arguments:.*{re.escape(name)}"
    return f"re:\\b404\\b.*{re.escape(name)}"


def _short(kind: str, api: str) -> str:
    return api if kind == "module" else api.split(":")[-1].rsplit(".", 1)[-1]


def covered_by(
    row: dict[str, Any], curated: list[dict[str, Any]], trl_scanned: list[str], vllm_scanned: list[str]
) -> str | None:
    """The hand-written catalogue entry that already tells this break (its name in the entry's
    title or symptoms, overlapping TRL and vLLM ranges), so one failure gives one finding."""
    short = _short(row["kind"], row["api"])
    for entry in curated:
        text = " ".join([str(entry.get("title", "")), *map(str, entry.get("symptoms") or [])])
        quoted = f"'{short}'" in text or f"'{re.escape(short)}'" in text
        if not quoted and not (len(short) >= 12 and short in text):
            continue  # a short name ("device") must appear quoted, as Python's messages quote it
        pk = (entry.get("when") or {}).get("packages") or {}
        if not _overlap(row["trl"], pk.get("trl"), trl_scanned):
            continue
        if not any(_overlap(v, pk.get("vllm"), vllm_scanned) for v in row["inside_declared_range"]):
            continue
        return str(entry.get("id"))
    return None


def mark_covered(matrix: dict[str, Any], curated: list[dict[str, Any]]) -> None:
    """``covered_by`` on the rows a hand-written entry tells; ``fails_first`` on the rows of a file
    whose import of vLLM already fails for the same releases (one failure, one finding)."""
    rows = [r for r in matrix["breaks"] if r.get("inside_declared_range") and r["on_grpo_path"]]
    for row in rows:
        by = covered_by(row, curated, matrix["trl_scanned"], matrix["vllm_scanned"])
        if by:
            row["covered_by"] = by
    imports = [r for r in rows if r["kind"] in ("module", "name")]
    for row in rows:
        for imp in imports:
            if imp is row or imp["trl_file"] != row["trl_file"]:
                continue
            if row["kind"] == "module" or (row["kind"] == "name" and imp["kind"] == "name"):
                continue  # a module row stands first; names of one import line stand side by side
            if row["kind"] == "name" and imp["api"] != row["api"].split(":")[0]:
                continue  # a name is shadowed only by its own module's absence
            scanned = matrix["trl_scanned"]
            inside_imp = SpecifierSet(imp["trl"])
            if not all(Version(t) in inside_imp for t in scanned if Version(t) in SpecifierSet(row["trl"])):
                continue  # the import fails for only some of these TRL releases
            if any(
                _overlap(v, w, matrix["vllm_scanned"])
                for v in row["inside_declared_range"]
                for w in imp["inside_declared_range"]
            ):
                row["fails_first"] = imp["api"]
                if imp.get("covered_by") and not row.get("covered_by"):
                    row["covered_by"] = imp["covered_by"]
                break


def _overlap(a: str, b: str | None, scanned: list[str]) -> bool:
    if not b:
        return True
    sa, sb = SpecifierSet(a), SpecifierSet(str(b))
    return any(Version(v) in sa and Version(v) in sb for v in scanned)


def derived_failures(matrix: dict[str, Any]) -> str | None:
    """Catalogue entries for the breaks on GRPO's path that TRL's declared range admits and no
    hand-written entry tells already."""
    entries = []
    for row in matrix["breaks"]:
        if not row.get("inside_declared_range") or not row["on_grpo_path"]:
            continue
        if row.get("covered_by") or row.get("fails_first"):
            continue
        api, kind = row["api"], row["kind"]
        name = _short(kind, api)
        mod = api.split(":")[0]
        for vspec in row["inside_declared_range"]:
            ident = re.sub(
                r"[^a-z0-9]+", "-", f"trl-vllm-api-{name}-trl-{row['trl']}-vllm-{vspec}".lower()
            ).strip("-")
            what = {
                "module": f"imports module {api}",
                "name": f"imports {name} from {mod}",
                "attribute": f"calls {api.split(':')[-1]}",
                "llm-kwarg": f"passes LLM({name}=...)",
                "sampling-kwarg": f"passes SamplingParams({name}=...)",
                "serve-flag": f"starts `vllm serve` with {name}",
                "endpoint": f"calls the server route {name}",
            }[kind]
            entries.append(
                {
                    "id": ident[:120],
                    "title": (
                        f"TRL {row['trl']} {what}, which vLLM {vspec} lacks (inside TRL's declared range)"
                    ),
                    "kind": "crash",
                    "depends_on": "run",
                    "when": _when(row, vspec),
                    "symptoms": [_symptom(kind, api)],
                    "cause": (
                        f"{row['trl_file']} of TRL {row['trl']} {what}; the vLLM {vspec} wheels do not "
                        "have it (derived by scripts/refresh_knowledge.py from the wheels), although TRL's "
                        "declared vLLM range admits that vLLM."
                    ),
                    "fix": f"pip install 'vllm{_outside(vspec)}'  # a vLLM this TRL's API use works with",
                    "sources": [
                        row["source"],
                        PYPI_URL.format(pkg="vllm", v=vspec.split(",")[0].lstrip("=<>")),
                    ],
                }
            )
    if not entries:
        return None  # the catalogue's files hold at least one entry: no file
    head = (
        "# Generated by scripts/refresh_knowledge.py from rules/knowledge/vllm_api.yaml -- do not edit.\n"
        "# Breaks of TRL's vLLM API use that TRL's own declared vLLM range admits (GRPO's path only).\n"
    )
    return head + _dump({"schema": "envdoctor.known_failures/1", "failures": entries})


def _when(row: dict[str, Any], vspec: str) -> dict[str, Any]:
    """The entry's condition: the two ranges, and vLLM in use where only a vLLM run reaches the
    break (a call, or any import of TRL's server script; a module-level import elsewhere fails at
    ``import trl`` whether vLLM is used or not)."""
    when: dict[str, Any] = {"packages": {"trl": row["trl"], "vllm": vspec}}
    if row["kind"] not in ("module", "name") or row["trl_file"].endswith("vllm_serve.py"):
        when["config"] = {"use_vllm": True}
    return when


def _outside(vspec: str) -> str:
    first = vspec.split(",")[0].lstrip("=<>")
    return f"<{first}"


def horizon_yaml(newest: dict[str, tuple[str, str]], today: str) -> str:
    head = (
        "# The knowledge horizon: for each package, the newest release envdoctor's knowledge covers, and\n"
        "# when it was published (the earliest upload time of its files on the package index). A version\n"
        "# newer than this is past what envdoctor has read: PKG009 says so (envdoctor.knowledge.horizon).\n"
        "# Written by scripts/refresh_knowledge.py.\n"
    )
    lines = ["schema: envdoctor.knowledge/1", f'checked: "{today}"', "packages:"]
    for pkg, (v, d) in newest.items():
        lines += [f"  {pkg}:", f'    newest: "{v}"', f'    released: "{d}"']
        lines.append(f"    references: [https://pypi.org/project/{pkg}/{v}/]")
    return head + "\n".join(lines) + "\n"


def trl_line_block(minor: str, rel: dict[str, Any]) -> str:
    """A ``trl_lines`` entry for a TRL minor release trl.yaml lacks (to review by hand)."""
    v = Version(minor)
    nxt = f"{v.major}.{v.minor + 1}.0"
    rng = rel["warning"] or rel["extra"]
    line = {
        "trl": f">={v.major}.{v.minor}.0,<{nxt}",
        "vllm": rng,
        "vllm_extra": rel["extra"],
        "vllm_warning_range": rel["warning"],
        "note": "Derived by scripts/refresh_knowledge.py from the PyPI wheel; review the rest of this line.",
        "references": [
            PYPI_URL.format(pkg="trl", v=minor),
            TRL_URL.format(v=minor, path="trl/import_utils.py"),
        ],
    }
    text = yaml.safe_dump([line], sort_keys=False, width=110)
    return text


def update_trl_yaml(text: str, ranges: dict[str, dict[str, Any]]) -> tuple[str, list[str]]:
    """Append lines for uncovered TRL minors; report derived ranges that differ from curated lines."""
    data = yaml.safe_load(text)
    lines = data.get("trl_lines", [])
    notes: list[str] = []
    added: dict[str, dict[str, Any]] = {}
    for ver, rel in sorted(ranges.items(), key=lambda kv: Version(kv[0])):
        line = next((ln for ln in lines if Version(ver) in SpecifierSet(str(ln.get("trl", "")))), None)
        if line is None:
            minor = ".".join(ver.split(".")[:2]) + ".0"
            added.setdefault(minor, rel)
            continue
        derived = rel["warning"] or rel["extra"]
        if (
            rel["warning"]
            and line.get("vllm_warning_range")
            and not _same_spec(rel["warning"], line["vllm_warning_range"])
        ):
            notes.append(
                f"trl {ver}: import-time range {rel['warning']} differs from curated "
                f"{line['vllm_warning_range']}"
            )
        elif (
            derived
            and line.get("vllm")
            and not line.get("vllm_lower_bound_only")
            and not _same_spec(derived, line["vllm"])
        ):
            notes.append(f"trl {ver}: derived vLLM range {derived} differs from curated {line['vllm']}")
    if added:
        block = "".join(trl_line_block(m, r) for m, r in added.items())
        m = re.search(r"^( *)- trl:", text, re.M)
        pad = m.group(1) if m else ""
        block = "".join(pad + ln + "\n" if ln else "\n" for ln in block.splitlines())
        cut = text.index("\nfeatures:")
        text = text[:cut].rstrip("\n") + "\n" + block + text[cut:]
        notes += [f"trl {m}: new trl_lines entry (review it)" for m in added]
    return text, notes


def _same_spec(a: str, b: str) -> bool:
    return SpecifierSet(str(a)) == SpecifierSet(str(b))


def grpo_keys_yaml(trls: dict[str, Release], old_text: str | None) -> str | None:
    spec = importlib.util.spec_from_file_location(
        "derive_grpo_config_keys", ROOT / "scripts" / "derive_grpo_config_keys.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    old = yaml.safe_load(old_text) if old_text else {}
    origins = (old or {}).get("origins") or {}
    snaps = []
    for v in _sorted(trls):
        srcs = {p: trls[v].files.get(p) for p in (mod.GRPO_PATH, *mod.BASE_PATHS)}
        if srcs[mod.GRPO_PATH] is None:
            continue
        origin = origins.get(v) or (
            f"tag v{v}" if v in ((old or {}).get("tags_scanned") or []) else f"wheel trl-{v}-py3-none-any.whl"
        )
        snaps.append((Version(v), origin, mod.fields_at(srcs)))
    if not snaps:
        return None
    return str(mod.render(mod.build_doc(snaps)))


# --------------------------------------------------------------------------------------------
# The command


def refresh(
    cache: Path,
    rules: Path,
    *,
    check: bool = False,
    keep_wheels: bool = False,
    today: str | None = None,
    releases: Callable[[str], dict[str, str]] = index_releases,
    download: Callable[[str, str, Path], Path] = download_wheel,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> tuple[dict[str, str], list[str]]:
    """Derive and (unless ``check``) write the knowledge files; returns {path: new text} of the
    files that change, and notes for the maintainer."""
    today = today or dt.date.today().isoformat()
    started = time.monotonic()
    index = {p: releases(p) for p in HORIZON_PACKAGES}
    trl_versions = [v for v in _sorted(index["trl"]) if Version(v) >= TRL_MIN]
    vllm_versions = [v for v in _sorted(index["vllm"]) if Version(v) >= VLLM_MIN]
    trls = {v: fetch_release("trl", v, cache, keep_wheels, download) for v in trl_versions}
    log(f"read {len(trls)} TRL releases ({time.monotonic() - started:.0f} s)")
    vllms: dict[str, Release] = {}
    for v in vllm_versions:
        vllms[v] = fetch_release("vllm", v, cache, keep_wheels, download)
        log(f"  vllm {v} read ({time.monotonic() - started:.0f} s)")
    ranges = {
        v: {
            "extra": extra_range(r.metadata),
            "warning": import_time_range(r.files.get("trl/import_utils.py")),
        }
        for v, r in trls.items()
    }
    declared = {v: (r["warning"] or r["extra"] or None) for v, r in ranges.items()}
    matrix = derive_matrix(trls, vllms, declared)
    log(f"matrix: {len(matrix['breaks'])} break rows ({time.monotonic() - started:.0f} s)")

    k = rules / "knowledge"
    curated = [
        e
        for f in sorted((k / "known_failures").glob("*.yaml"))
        if f.name != Path(DERIVED_FILE).name
        for e in (yaml.safe_load(f.read_text(encoding="utf-8")) or {}).get("failures") or []
    ]
    mark_covered(matrix, curated)
    new: dict[Path, str | None] = {}
    new[k / "vllm_api.yaml"] = matrix_yaml(matrix, today)
    new[k / DERIVED_FILE] = derived_failures(matrix)
    old_keys = _read(k / "grpo_config_keys.yaml")
    keys = grpo_keys_yaml(trls, old_keys)
    if keys:
        new[k / "grpo_config_keys.yaml"] = keys
    notes: list[str] = []
    trl_text = _read(k / "trl.yaml")
    if trl_text:
        new[k / "trl.yaml"], notes = update_trl_yaml(trl_text, ranges)
    newest = {}
    for p in HORIZON_PACKAGES:
        if index[p]:
            v = _sorted(index[p])[-1]
            date = index[p][v]
            if not date and p == "trl":
                date = trls[v].built or ""
            newest[p] = (v, date)
    new[k / "horizon.yaml"] = _keep_checked(horizon_yaml(newest, today), _read(k / "horizon.yaml"))

    changed: dict[str, str] = {}
    for path, text in new.items():
        old = _read(path)
        if old == text:
            continue
        rel = str(path.relative_to(rules.parent)) if rules.parent in path.parents else str(path)
        changed[rel] = "".join(
            difflib.unified_diff(
                (old or "").splitlines(True), (text or "").splitlines(True), f"a/{rel}", f"b/{rel}", n=1
            )
        )
        if check:
            continue
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    log(f"done in {time.monotonic() - started:.0f} s")
    return changed, notes


def _keep_checked(text: str, old: str | None) -> str:
    """The horizon file unchanged when only its ``checked`` date would move (no new release)."""
    if old and re.sub(r"checked: .*", "", old) == re.sub(r"checked: .*", "", text):
        return old
    return text


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--cache",
        required=True,
        type=Path,
        help="folder for the wheels and their extracts (outside the repository)",
    )
    ap.add_argument(
        "--rules",
        type=Path,
        default=ROOT / "rules",
        help="the rules folder to update (default: this checkout's)",
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="report what would change; write nothing; exit 1 if anything would",
    )
    ap.add_argument(
        "--keep-wheels", action="store_true", help="keep the vLLM wheels (else only their .py extracts)"
    )
    ap.add_argument("--today", help="the date written as checked (default: today)")
    args = ap.parse_args(argv)
    if ROOT in args.cache.resolve().parents or args.cache.resolve() == ROOT:
        ap.error("--cache must be outside the repository (wheels are never committed)")
    changed, notes = refresh(
        args.cache.expanduser(), args.rules, check=args.check, keep_wheels=args.keep_wheels, today=args.today
    )
    for diff in changed.values():
        sys.stdout.write(diff)
    for note in notes:
        print(f"note: {note}")
    verb = "would change" if args.check else "changed"
    print(f"{len(changed)} file(s) {verb}: {', '.join(changed) or 'none'}")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
