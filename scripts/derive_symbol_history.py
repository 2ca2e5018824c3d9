#!/usr/bin/env python3
"""Derive the symbol history of the stack's packages from their release wheels (maintainer command).

For each package (TRL >= 0.11, vLLM >= 0.7.2, transformers >= 4.46, peft >= 0.13, accelerate >= 1.0,
unsloth_zoo >= 2025.3.1, liger-kernel >= 0.3.0, unsloth >= 2025.1, deepspeed >= 0.14, flash-attn >= 1.0,
bitsandbytes >= 0.43, and the packages under the stack: triton >= 2.2, torchao >= 0.3, xformers >=
0.0.24, flashinfer-python (its wheels on the index: >= 0.5), datasets >= 2.17, safetensors >= 0.4.2,
sglang >= 0.4, verl >= 0.2, ms-swift >= 2.5, torch >= 2.0) it reads every final release's ``.py`` files
from the wheel (``pip download --no-deps``, the cache folder and its conventions are
scripts/refresh_knowledge.py's: ``CACHE/PKG/PKG-V-*.whl`` or the extract ``CACHE/PKG/PKG-V.src.zip``).
Nothing is installed or imported: ``zipfile`` and ``ast`` only; a file is parsed once per content
(most files do not change between releases: the facts are cached by the SHA-1 of the text, also on
disk in ``CACHE/symbols-facts-PKG.pickle``). Per release it records:

* the modules (a ``.py`` file or a package's ``__init__.py``);
* each module's top-level names: defs, classes, assignments (in ``if`` / ``try`` blocks too), in a
  package's ``__init__`` the names it imports from the package's own modules (re-exports; a plain
  module's own imports are not its API, unless its ``__all__`` lists them), ``import *`` of an own
  module followed, ``__all__`` entries, and the lazy exports of an ``__init__`` (transformers'
  ``_import_structure`` lists, vLLM's ``MODULE_ATTRS``-like ``{"Name": ".module:Name"}`` maps);
* per top-level class: its attributes (methods, class attributes and annotated fields, ``self.X =``
  in its methods), its base classes (by name), whether its ``__init__`` comes from its fields
  (a dataclass or a pydantic model);
* per public function, and per public method / ``__init__`` / ``__call__`` of a class: the
  parameter names (``*`` and ``**`` for ``*args`` / ``**kwargs``).

Bulk subpackages whose classes are not an API other packages call (``transformers.models.*``, vLLM's
models, layers, kernels, attention backends, compilation passes, vendored code: ``PACKAGES``) keep
their modules and names only, so the history stays small.

It writes ``rules/knowledge/symbols/DIST.json.gz`` (DIST: the distribution's normalized name;
schema ``envdoctor.symbols/1``): the releases (sorted), and every symbol with the releases that have
it as intervals of indices into that list (``"3-9,12-40"``; ``0``: the same releases as the symbol it
belongs to). Budget: at most 3.5 MB for all files together (``--budget``; the command fails above it).
envdoctor reads them only in triage, only for an ImportError / AttributeError / TypeError of a call
(envdoctor/triage/symbols.py); the static check never does.

Usage:
    python scripts/derive_symbol_history.py --cache ~/envdoctor-wheels                 # all packages
    python scripts/derive_symbol_history.py --cache ~/envdoctor-wheels --package trl   # one
    python scripts/derive_symbol_history.py --cache DIR --package trl --offline        # no index, no download

Needs network for the index listing and ``pip download`` (``--offline``: the cache's wheels only).
The packages of ``REMOTE`` are not downloaded whole: their wheels' ``.py`` files and METADATA are read
from the index by HTTP range requests into ``CACHE/PKG/PKG-V.src.zip`` (``remote_extract``; torch's
30 MB of Python out of an 800 MB wheel).

``--pins`` writes ``rules/knowledge/symbols/pins.json`` instead: for the packages of ``PIN_SOURCES``,
each release's exact or bounded Requires-Dist on the others (torch -> triton, vLLM -> torch /
xformers / flashinfer-python, xformers -> torch, SGLang -> flashinfer-python / torch), for a Linux
x86-64 CPython 3.11 wheel, from the METADATA of the cache's wheels or read alone from the index
(``CACHE/pins/PKG``). Triage names the release of B that the log's release of A requires.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import io
import json
import pickle
import re
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from packaging.version import InvalidVersion, Version

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts: scripts/sibling.py
from sibling import load as _load  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "symbols"
SCHEMA = "envdoctor.symbols/1"
BUDGET = 3_500_000  # 2 MB until the packages under the stack came (issue #36)

#: distribution -> (import names, the first release read, bulk subpackages: modules and names only)
PACKAGES: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "trl": (("trl",), "0.11.0", ()),
    "vllm": (
        ("vllm",),
        "0.7.2",
        (
            "vllm.model_executor.models.",
            "vllm.model_executor.layers.",
            "vllm.model_executor.kernels.",
            "vllm.models.",
            "vllm.vllm_flash_attn.",
            "vllm.third_party.",
            "vllm.attention.backends.",
            "vllm.v1.attention.backends.",
            "vllm.distributed.kv_transfer.",
            "vllm.transformers_utils.configs.",
            "vllm.transformers_utils.processors.",
            "vllm.compilation.",
            "vllm.v1.kv_offload.",
        ),
    ),
    "transformers": (("transformers",), "4.46.0", ("transformers.models.",)),
    "peft": (("peft",), "0.13.0", ()),
    "accelerate": (("accelerate",), "1.0.0", ()),
    "unsloth_zoo": (("unsloth_zoo",), "2025.3.1", ()),
    # the packages that patch others' functions at run time (a model's forward, PEFT's layers):
    # read for the signatures of their replacements; no wheel per release in their repositories'
    # tags, so the cache holds extracts made from the release tags (liger-kernel) or the version
    # bumps (unsloth) of a mirror: ``git archive --format=zip -o CACHE/PKG/PKG-V.src.zip REV``
    "liger_kernel": (("liger_kernel",), "0.3.0", ()),
    "unsloth": (("unsloth",), "2025.1", ()),
    # what accelerate, transformers and TRL call under ZeRO, transformers' attention, QLoRA; read
    # from extracts of their release tags (``git archive``, as above): their kernels, ops and
    # inference engines are modules and names only
    "deepspeed": (
        ("deepspeed",),
        "0.14.0",
        (
            "deepspeed.ops.",
            "deepspeed.inference.",
            "deepspeed.module_inject.",
            "deepspeed.model_implementations.",
            "deepspeed.autotuning.",
            "deepspeed.compression.",
            "deepspeed.nebula.",
            "deepspeed.linear.",
            "deepspeed.moe.",
            "deepspeed.pipe.",
            "deepspeed.runtime.pipe.",
            "deepspeed.sequence.",
            "deepspeed.compile.",
            "deepspeed.elasticity.",
            "deepspeed.monitor.",
            "deepspeed.profiling.",
            "deepspeed.tools.",
        ),
    ),
    # from 1.0: flash_attn_varlen_func came with 2.0 (code written for 2 under flash-attn<2: NameError)
    "flash_attn": (("flash_attn",), "1.0.0", ("flash_attn.cute.", "flash_attn.ops.", "flash_attn.models.")),
    "bitsandbytes": (("bitsandbytes",), "0.43.0", ("bitsandbytes.triton.", "bitsandbytes.backends.")),
    # the packages whose names drift under the stack (the dev logs' ImportError / AttributeError
    # lines, docs/validation/triage-misses-2026-11-29.md C5a): triton under torch's inductor,
    # torchao's quantization API, vLLM's and SGLang's kernels, HF datasets, the RL frameworks;
    # read from the index by range requests (``remote_extract``: the ``.py`` files of a wheel, not
    # its compiled code), releases of 2024 on
    "triton": (("triton",), "2.2.0", ("triton._C.", "triton.backends.amd.", "triton.tools.")),
    "torchao": (("torchao",), "0.3.0", ("torchao.prototype.", "torchao.kernel.", "torchao.csrc.")),
    "xformers": (
        ("xformers",),
        "0.0.24",
        ("xformers._flash_attn.", "xformers.benchmarks.", "xformers.components.", "xformers.triton."),
    ),
    "flashinfer_python": (
        ("flashinfer",),
        "0.2.0",
        (
            "flashinfer.jit.",
            "flashinfer.data.",
            "flashinfer.cute_dsl.",
            "flashinfer.experimental.",
            "flashinfer.fused_moe.",
            "flashinfer.moe_ep.",
            "flashinfer.gdn_kernels.",
            "flashinfer.kda_kernels.",
            "flashinfer.prims_ts.",
            "flashinfer.msa_ops.",
            "flashinfer.trace.",
            "flashinfer.comm.",
            "flashinfer.gemm.",
            "flashinfer.mla.",
            "flashinfer.attention.",
        ),
    ),
    "datasets": (("datasets",), "2.17.0", ("datasets.packaged_modules.",)),
    "safetensors": (("safetensors",), "0.4.2", ()),
    "sglang": (
        ("sglang",),
        "0.4.0",
        (
            "sglang.srt.models.",
            "sglang.srt.layers.",
            "sglang.srt.configs.",
            "sglang.srt.disaggregation.",
            "sglang.srt.function_call.",
            "sglang.srt.multimodal.",
            "sglang.srt.lora.",
            "sglang.srt.mem_cache.",
            "sglang.srt.speculative.",
            "sglang.srt.eplb.",
            "sglang.multimodal_gen.",
            "sglang.test.",
            "sglang.bench_",
            "sglang.lang.",
            "sglang.srt.managers.",
            "sglang.srt.model_executor.",
            "sglang.srt.utils",
            "sglang.srt.environ",
            "sglang.srt.arg_groups.",
            "sglang.srt.observability.",
            "sglang.srt.distributed.",
            "sglang.srt.parser.",
            "sglang.srt.model_loader.",
        ),
    ),
    "verl": (("verl",), "0.2", ("verl.models.", "verl.third_party.", "verl.experimental.", "verl.tools.")),
    "ms_swift": (
        ("swift",),
        "2.5.0",
        (
            "swift.llm.model.",
            "swift.llm.template.",
            "swift.model.",
            "swift.template.",
            "swift.ui.",
            "swift.plugin.",
        ),
    ),
    # torch: its wheels' .py files alone (range requests: some 30 MB of 800); every submodule is
    # names only (the modules and their top-level names: an import or a module attribute that
    # drifted), the top-level module with its functions' parameters
    "torch": (("torch",), "2.0.0", ("torch.",)),
    # (OpenRLHF's wheels hold compiled modules only, no .py: no history from them; its pins are read)
}

#: subpackages not read at all (generated or vendored code no other package imports by name:
#: FlashInfer's experimental kernels and its data files' Python; names only would still be
#: half a megabyte)
SKIP: dict[str, tuple[str, ...]] = {
    "sglang": (
        "sglang.kernels.",
        "sglang.jit_kernel.",
        "sglang.multimodal_gen.",
        "sglang.test.",
        "sglang.srt.hardware_backend.",
        "sglang.srt.debug_utils.",
        "sglang.srt.models.",
        "sglang.benchmark.",
    ),
    "flashinfer_python": (
        "flashinfer.experimental.",
        "flashinfer.data.",
        "flashinfer.moe_ep.",
        "flashinfer.jit.",
        "flashinfer.kda_kernels.",
        "flashinfer.gdn_kernels.",
        "flashinfer.prims_ts.",
        "flashinfer.cute_dsl.",
        "flashinfer.trace.",
        "flashinfer.msa_ops.",
        "flashinfer.fused_moe.cute_dsl.",
        "flashinfer.fused_moe.core.",
    ),
}

#: packages whose compiled modules' stubs are read as those modules (``torch/_C/__init__.pyi``: the
#: dtypes and functions ``from torch._C import *`` puts in ``torch``)
STUBS = frozenset({"torch"})

#: read from the index by range requests when not in the cache (``remote_extract``)
REMOTE = frozenset(
    ("triton", "torchao", "xformers", "flashinfer_python", "datasets", "safetensors", "sglang", "verl")
    + ("ms_swift", "torch")
)

# --------------------------------------------------------------------------------------------
# One file's facts (parsed once per content)


@dataclass
class ClassFacts:
    attrs: set[str] = field(default_factory=set)
    bases: list[str] = field(default_factory=list)
    params: dict[str, list[str]] = field(default_factory=dict)
    fields_init: bool = False  # __init__ from the fields (dataclass, pydantic model)


@dataclass
class FileFacts:
    names: set[str] = field(default_factory=set)
    #: names imported from a module: (relative level, module, name) -> the bound name
    imports: list[tuple[int, str, str, str]] = field(default_factory=list)
    star: list[tuple[int, str]] = field(default_factory=list)
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    functions: dict[str, list[str]] = field(default_factory=dict)
    lazy: set[str] = field(default_factory=set)  # names a lazy ``__init__`` exports


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    out = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if a.vararg:
        out.append("*")
    if a.kwarg:
        out.append("**")
    return [p for p in out if p not in ("self", "cls")]


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    if isinstance(node, ast.Subscript):  # Generic[T]
        return _dotted(node.value)
    if isinstance(node, ast.Call):
        return None
    return None


def _targets(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            yield from _targets(elt)


def _flat(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a body, with those of its ``if`` / ``try`` / ``with`` blocks."""
    for st in body:
        yield st
        if isinstance(st, ast.If):
            yield from _flat(st.body)
            yield from _flat(st.orelse)
        elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            for part in (st.body, st.orelse, st.finalbody):  # type: ignore[attr-defined]
                yield from _flat(part)
            for h in st.handlers:  # type: ignore[attr-defined]
                yield from _flat(h.body)
        elif isinstance(st, ast.With):
            yield from _flat(st.body)


_FIELDS_DECORATORS = re.compile(r"(?:^|\.)(?:dataclass|config|attrs|define|frozen)$")
_MODEL_BASES = {"BaseModel", "BaseSettings", "NamedTuple", "TypedDict"}
_LAZY_VALUE = re.compile(r"^\.?[\w.]*(?::\w+)?$")


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _class(node: ast.ClassDef) -> ClassFacts:
    c = ClassFacts(bases=[b for b in (_dotted(x) for x in node.bases) if b])
    deco = [_dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list]
    has_init = False
    for st in _flat(node.body):
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            c.attrs.add(st.name)
            if st.name == "__init__":
                has_init = True
            if not st.name.startswith("_") or st.name in ("__init__", "__call__", "__new__"):
                c.params[st.name] = _params(st)
            for sub in ast.walk(st):
                tgts: list[ast.AST] = []
                if isinstance(sub, ast.Assign):
                    tgts = list(sub.targets)
                elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                    tgts = [sub.target]
                for t in tgts:
                    for e in t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]:
                        if isinstance(e, ast.Attribute) and _is_self(e.value):
                            c.attrs.add(e.attr)
        elif isinstance(st, ast.ClassDef):
            c.attrs.add(st.name)
        elif isinstance(st, ast.Assign):
            for t in st.targets:
                c.attrs.update(_targets(t))
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            c.attrs.add(st.target.id)
    fields_like = any(_FIELDS_DECORATORS.search(d) for d in deco) or any(
        b.rsplit(".", 1)[-1] in _MODEL_BASES for b in c.bases
    )
    if fields_like and not has_init:
        c.fields_init = True
        c.params["__init__"] = [
            st.target.id
            for st in node.body
            if isinstance(st, ast.AnnAssign)
            and isinstance(st.target, ast.Name)
            and "ClassVar" not in ast.dump(st.annotation)
        ]
    return c


def _strings(node: ast.AST) -> Iterator[str]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


def file_facts(src: str, is_init: bool) -> FileFacts:
    """The facts of one module's text (module docstring)."""
    f = FileFacts()
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return f
    for st in _flat(tree.body):
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            f.names.add(st.name)
            if not st.name.startswith("_") or st.name == "__getattr__":
                f.functions[st.name] = _params(st)
        elif isinstance(st, ast.ClassDef):
            f.names.add(st.name)
            f.classes[st.name] = _class(st)
        elif isinstance(st, ast.Assign):
            for t in st.targets:
                f.names.update(_targets(t))
                if isinstance(t, ast.Name) and t.id == "__all__":
                    f.lazy.update(s for s in _strings(st.value) if s.isidentifier())
            if is_init:
                _lazy_exports(st.value, f)
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            f.names.add(st.target.id)
            if is_init and st.value is not None:
                _lazy_exports(st.value, f)
        elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id == "__all__":
            f.lazy.update(s for s in _strings(st.value) if s.isidentifier())
        elif isinstance(st, ast.Import):
            for a in st.names:
                f.imports.append((0, a.name, "", a.asname or a.name.split(".")[0]))
        elif isinstance(st, ast.ImportFrom):
            for a in st.names:
                if a.name == "*":
                    f.star.append((st.level, st.module or ""))
                else:
                    f.imports.append((st.level, st.module or "", a.name, a.asname or a.name))
        elif isinstance(st, ast.Expr) and is_init and isinstance(st.value, ast.Call):
            # _import_structure["x"].extend([...]) / .append("Name")
            func = st.value.func
            if isinstance(func, ast.Attribute) and "_import_structure" in ast.dump(func.value):
                for arg in st.value.args:
                    f.lazy.update(s for s in _strings(arg) if s.isidentifier())
    return f


def _lazy_exports(value: ast.AST, f: FileFacts) -> None:
    """An ``__init__``'s lazy exports: ``{"mod": ["Name", …]}`` (transformers), ``{"Name":
    ".mod:Name"}`` (vLLM), a list of names."""
    if isinstance(value, ast.Dict):
        for k, v in zip(value.keys, value.values, strict=False):
            if isinstance(v, (ast.List, ast.Tuple, ast.Set)):
                f.lazy.update(s for s in _strings(v) if s.isidentifier())
            elif (
                isinstance(k, ast.Constant)
                and isinstance(k.value, str)
                and k.value.isidentifier()
                and isinstance(v, ast.Constant)
                and isinstance(v.value, str)
                and _LAZY_VALUE.match(v.value)
                and (":" in v.value or v.value.startswith("."))
            ):
                f.lazy.add(k.value)


# --------------------------------------------------------------------------------------------
# One release: modules and their facts


@dataclass
class ReleaseFacts:
    modules: dict[str, FileFacts]
    packages: set[str]  # modules that are packages (an __init__.py)


class FactsCache:
    """Parsed files by the SHA-1 of their text (kept on disk between runs)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[str, FileFacts] = {}
        if path is not None and path.is_file():
            try:
                self.data = pickle.loads(path.read_bytes())  # noqa: S301 (the maintainer's own cache)
            except Exception:
                self.data = {}
        self.dirty = False

    def get(self, src: bytes, is_init: bool) -> FileFacts:
        key = hashlib.sha1(src + (b"\0init" if is_init else b"")).hexdigest()  # noqa: S324
        hit = self.data.get(key)
        if hit is None:
            hit = file_facts(src.decode("utf-8", "replace"), is_init)
            self.data[key] = hit
            self.dirty = True
        return hit

    def save(self) -> None:
        if self.path is not None and self.dirty:
            self.path.write_bytes(pickle.dumps(self.data, protocol=pickle.HIGHEST_PROTOCOL))
            self.dirty = False


#: ``torch._C._distributed_c10d.ProcessGroupNCCL``, ``from torch._C import _cuda_getDeviceCount``
_COMPILED_REF = re.compile(rb"\b(torch\._C(?:\.\w+)+)")
_TOP_REF = re.compile(rb"(?<![\w.'\"])torch\.([A-Za-z_]\w*)\b")
_COMPILED_FROM = re.compile(rb"^\s*from (torch\._C(?:\.\w+)*) import \(?([\w ,]+)", re.M)


def _compiled_refs(src: bytes) -> Iterator[str]:
    """The dotted ``torch._C`` names ``src`` reads (``from torch._C import a, b`` as ``torch._C.a``)."""
    yield from (m.decode() for m in _COMPILED_REF.findall(src))
    for module, names in _COMPILED_FROM.findall(src):
        for name in names.decode().split(","):
            name = name.strip().split(" ")[0]
            if name.isidentifier():
                yield f"{module.decode()}.{name}"


def _compiled_names(refs: Iterable[str], compiled: set[str]) -> Iterator[tuple[str, str]]:
    """``(compiled module, name)`` of each dotted reference: the longest compiled module it starts
    with, and the name after it."""
    for ref in refs:
        parts = ref.split(".")
        for cut in range(len(parts) - 1, 1, -1):
            module = ".".join(parts[:cut])
            if module in compiled:
                yield module, parts[cut]
                break


def read_release(
    archive: Path, roots: tuple[str, ...], cache: FactsCache, skip: tuple[str, ...] = (), stubs: bool = False
) -> ReleaseFacts:
    """The modules under ``roots`` of a wheel or extract and their facts (none under ``skip``;
    with ``stubs``, a ``.pyi`` without its ``.py``: the names of a compiled module, ``torch._C``)."""
    modules: dict[str, FileFacts] = {}
    packages: set[str] = set()
    compiled: set[str] = set()  # the modules read from their stubs
    used: set[str] = set()  # ``torch._C.X`` as the release's own Python spells it
    top: set[str] = set()  # and ``torch.X``
    with zipfile.ZipFile(archive) as zf:
        listed = zf.namelist()
        present = set(listed)
        for name in listed:
            stub = stubs and name.endswith(".pyi") and name[:-1] not in present  # a compiled module's
            if not (name.endswith(".py") or stub) or name.split("/", 1)[0] not in roots:
                continue
            parts = name[: -4 if stub else -3].split("/")
            if not all(p.isidentifier() for p in parts):
                continue
            is_init = parts[-1] == "__init__"
            module = ".".join(parts[:-1] if is_init else parts)
            if skip and (module + ".").startswith(skip):
                continue
            if is_init:
                packages.add(module)
            src = zf.read(name)
            modules[module] = cache.get(src, is_init)
            if stub:
                compiled.add(module)
            elif stubs:
                used.update(_compiled_refs(src))
                top.update(m.decode() for m in _TOP_REF.findall(src))
    found = list(_compiled_names(used, compiled))
    found += [(root, name) for root in roots if root in modules for name in top]
    for module, name in found:
        # the stubs lag the compiled module (torch._C._cuda_hasPrimaryContext: in every CUDA build,
        # in the stubs from 2.15; torch.float8_e4m3fn: in 2.1, stubbed from 2.2), and the package's
        # module __getattr__ serves names no file binds (torch.has_cuda from 2.1): a name the
        # release's own code reads there is the release's
        modules[module] = replace(modules[module], names=modules[module].names | {name})
    for m in list(modules):  # packages without an __init__.py (namespace packages)
        parent = m.rsplit(".", 1)[0]
        while "." in m and parent not in modules:
            packages.add(parent)
            modules[parent] = FileFacts()
            m, parent = parent, parent.rsplit(".", 1)[0]
    return ReleaseFacts(modules, packages)


def _resolve(module: str, is_pkg: bool, level: int, target: str) -> str:
    if level == 0:
        return target
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, target] if target else base)


def module_names(rel: ReleaseFacts, roots: tuple[str, ...]) -> dict[str, set[str]]:
    """Each module's top-level names: its own, its lazy exports, what it imports from the
    package's own modules, and (followed) its ``import *`` of own modules; submodules are not
    names (Python binds them only once imported)."""
    out: dict[str, set[str]] = {}

    def own(target: str) -> bool:
        return target.split(".")[0] in roots

    def names(module: str, depth: int = 0) -> set[str]:
        if module in out:
            return out[module]
        f = rel.modules[module]
        is_pkg = module in rel.packages
        got = set(f.names) | f.lazy
        for level, target, name, bound in f.imports:
            full = _resolve(module, is_pkg, level, target) if level else target
            if not (is_pkg or bound in f.lazy):
                continue  # a module's own imports (``init_logger`` everywhere) are not its API
            if (own(full) and name) or (level == 0 and not name and own(target)):
                got.add(bound)  # a name of the package's own module, or one of its modules
        out[module] = got
        if depth < 8:
            for level, target in f.star:
                full = _resolve(module, is_pkg, level, target)
                if full in rel.modules and full != module:
                    sub = names(full, depth + 1)
                    allowed = rel.modules[full].lazy or {n for n in sub if not n.startswith("_")}
                    got.update(n for n in sub if n in allowed)
        return got

    for m in rel.modules:
        names(m)
    return out


# --------------------------------------------------------------------------------------------
# The history: symbol -> the releases that have it


class History:
    """Presence sets (bit masks over the releases) of every symbol, nested like the output. A
    release adds, per module, its facts and its names (``seen``); the symbols are expanded once
    per distinct facts at the end (``tree``), not once per release."""

    def __init__(self, releases: list[str]) -> None:
        self.releases = releases
        self.seen: dict[str, dict[Any, tuple[Any, int]]] = {}

    def see(self, module: str, key: Any, what: Any, i: int) -> None:
        slot = self.seen.setdefault(module, {})
        held = slot.get(key)
        slot[key] = (what, (held[1] if held else 0) | (1 << i))

    @staticmethod
    def add(tree: dict[str, Any], path: tuple[str, ...], mask: int) -> None:
        node = tree
        for key in path:
            node = node.setdefault(key, {})
        node["@"] = node.get("@", 0) | mask


def intervals(mask: int, n: int) -> str:
    """``"0-3,7-9"``: the indices set in ``mask`` as inclusive runs."""
    runs, i = [], 0
    while i < n:
        if mask >> i & 1:
            j = i
            while j + 1 < n and mask >> (j + 1) & 1:
                j += 1
            runs.append(f"{i}-{j}" if j > i else str(i))
            i = j + 1
        else:
            i += 1
    return ",".join(runs)


def _encode(node: dict[str, Any], parent: int, n: int) -> Any:
    """A symbol's releases (``0``: its parent's) and its members; a grouping node (``n``, ``c``,
    ``a``, ``p``, ``b``: no releases of its own) holds its members against the parent's."""
    if "@" not in node:
        return {k: _encode(v, parent, n) for k, v in sorted(node.items())}
    mask = node["@"]
    own: Any = 0 if mask == parent else intervals(mask, n)
    kids = {k: _encode(v, mask, n) for k, v in sorted(node.items()) if k != "@"}
    if not kids:
        return own
    return {"@": own, **kids}


def record(h: History, i: int, rel: ReleaseFacts, roots: tuple[str, ...], bulk: tuple[str, ...]) -> None:
    """Release ``i``'s modules, facts and names into ``h``."""
    allnames = module_names(rel, roots)
    for module, f in rel.modules.items():
        h.see(module, id(f), ("facts", f, module.startswith(bulk)), i)
        names = frozenset(allnames.get(module, ()))
        h.see(module, names, names, i)


def expand(h: History) -> dict[str, Any]:
    """The symbols of every module's facts and names, each with the releases that have it."""
    tree: dict[str, Any] = {}
    for module, slot in h.seen.items():
        for what, mask in slot.values():
            h.add(tree, ("m", module), mask)
            if isinstance(what, frozenset):
                for name in what:
                    h.add(tree, ("m", module, "n", name), mask)
                continue
            _, f, bulk = what
            if bulk:
                continue
            for cname, c in f.classes.items():
                h.add(tree, ("m", module, "c", cname), mask)
                for a in c.attrs:
                    h.add(tree, ("m", module, "c", cname, "a", a), mask)
                for b in c.bases:
                    h.add(tree, ("m", module, "c", cname, "b", b), mask)
                if c.fields_init:
                    h.add(tree, ("m", module, "c", cname, "d"), mask)
                for meth, ps in c.params.items():
                    h.add(tree, ("m", module, "c", cname, "p", meth), mask)
                    for p in ps:
                        h.add(tree, ("m", module, "c", cname, "p", meth, p), mask)
            for fname, ps in f.functions.items():
                h.add(tree, ("m", module, "f", fname), mask)
                for p in ps:
                    h.add(tree, ("m", module, "f", fname, p), mask)
    return tree


def dist_name(package: str) -> str:
    """The name envdoctor knows a distribution by (``unsloth-zoo``): the file's name too."""
    return re.sub(r"[-_.]+", "-", package).lower()


def document(h: History, package: str, roots: tuple[str, ...]) -> dict[str, Any]:
    n = len(h.releases)
    full = (1 << n) - 1
    return {
        "schema": SCHEMA,
        "package": dist_name(package),
        "import": list(roots),
        "releases": h.releases,
        "symbols": _encode({"@": full, **expand(h)}, full, n),
    }


# --------------------------------------------------------------------------------------------
# The releases and their archives (refresh_knowledge's index listing and cache)


def _refresh_knowledge() -> ModuleType:
    """scripts/refresh_knowledge.py, loaded once (scripts/sibling.py), when the index is asked."""
    return _load("refresh_knowledge")


def _version(text: str) -> Version | None:
    try:
        v = Version(text)
    except InvalidVersion:
        return None
    return None if v.is_prerelease or v.is_devrelease or v.local else v


def cached_releases(cache: Path, package: str) -> dict[str, Path]:
    """The releases the cache holds: version -> its extract or wheel."""
    found: dict[str, Path] = {}
    folder = cache / package
    for p in sorted(folder.glob(f"{package}-*")):
        m = re.match(rf"^{re.escape(package)}-([^-]+?)(?:\.src\.zip$|-.*\.whl$)", p.name)
        if m and _version(m.group(1)) is not None:
            found.setdefault(m.group(1), p)
            if p.name.endswith(".src.zip"):
                found[m.group(1)] = p
    return found


def releases_of(
    package: str,
    cache: Path,
    offline: bool,
    since: str,
    listing: Callable[[str], Iterable[str]] | None = None,
    download: Callable[[str, str, Path], Path] | None = None,
) -> list[tuple[str, Path]]:
    """Every final release >= ``since`` with its archive (downloaded when missing, unless offline)."""
    floor = Version(since)
    have = cached_releases(cache, package)
    if offline:
        wanted = list(have)
    else:
        rk = _refresh_knowledge()
        wanted = list((listing or rk.index_releases)(package))
    out = []
    for v in sorted((v for v in wanted if (_version(v) or Version("0")) >= floor), key=Version):
        path = have.get(v)
        if path is None and not offline:
            try:
                path = (download or _refresh_knowledge().download_wheel)(package, v, cache / package)
            except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
                print(f"{package} {v}: skipped ({e})", file=sys.stderr)  # an sdist-only release
                continue
        if path is not None:
            out.append((v, path))
    return out


class _RangeFile(io.RawIOBase):
    """A remote file read by HTTP range requests (a wheel's central directory and its ``.py``
    members, not its compiled libraries), with a read-ahead block so small neighbours share one."""

    BLOCK = 1 << 20

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0
        self.buf_at, self.buf = -1, b""

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, off: int, whence: int = 0) -> int:
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def _fetch(self, start: int, end: int) -> bytes:
        req = urllib.request.Request(self.url, headers={"Range": f"bytes={start}-{end - 1}"})  # noqa: S310
        with urllib.request.urlopen(req, timeout=300) as resp:  # noqa: S310 (the index's https URL)
            return bytes(resp.read())

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:
            n = self.size - self.pos
        n = min(n, self.size - self.pos)
        if n <= 0:
            return b""
        start, end = self.pos, self.pos + n
        if not (self.buf_at <= start and end <= self.buf_at + len(self.buf)):
            self.buf_at = start
            self.buf = self._fetch(start, min(self.size, max(end, start + self.BLOCK)))
        out = self.buf[start - self.buf_at : end - self.buf_at]
        self.pos += len(out)
        return out

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def _wheel_choice(files: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The wheel to read of one release's files: pure Python, else CPython 3.11 / abi3 on x86-64
    Linux, else any x86-64 Linux wheel (their ``.py`` files are the same)."""
    wheels = [f for f in files if str(f.get("filename", "")).endswith(".whl") and not f.get("yanked")]

    def rank(f: dict[str, Any]) -> tuple[int, str]:
        name = str(f["filename"])
        if name.endswith("-none-any.whl"):
            return 0, name
        linux = "x86_64" in name and "linux" in name
        if linux and ("-cp311-" in name or "-abi3-" in name):
            return 1, name
        return (2 if linux else 3), name

    wheels.sort(key=rank)
    return wheels[0] if wheels else None


_FILES: dict[str, list[dict[str, Any]]] = {}


def _index_files(package: str) -> list[dict[str, Any]]:
    """The index's files of ``package`` (its simple API's JSON: name, URL, size), read once."""
    if package not in _FILES:
        req = urllib.request.Request(
            f"https://pypi.org/simple/{package}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
        )
        with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 (an https URL built here)
            _FILES[package] = list(json.load(resp).get("files") or [])
    return _FILES[package]


def _file_version(package: str, filename: str) -> str | None:
    m = re.match(rf"^{re.sub(r'[-_.]+', '[-_.]', package)}-([^-]+?)-", filename, re.I)
    v = _version(m.group(1)) if m else None
    return str(v) if v is not None else None


def remote_extract(package: str, version: str, dest: Path, roots: tuple[str, ...]) -> Path:
    """``CACHE/PKG/PKG-V.src.zip`` with the ``.py`` files under ``roots`` and the METADATA of the
    release's wheel, read from the index by range requests (triton's and xformers' wheels are
    150-300 MB of compiled code around a few MB of Python)."""
    stubs = package in STUBS  # and the stubs of its compiled modules
    f = _wheel_choice([x for x in _index_files(package) if _file_version(package, x["filename"]) == version])
    if f is None:
        raise RuntimeError(f"{package} {version}: no wheel on the index")
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / f"{package}-{version}.src.zip"
    tmp = target.with_suffix(".part")
    remote = io.BufferedReader(_RangeFile(str(f["url"]), int(f["size"])), buffer_size=1 << 16)
    with zipfile.ZipFile(remote) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        infos = sorted(src.infolist(), key=lambda i: i.header_offset)
        for info in infos:
            name = info.filename
            top = name.split("/", 1)[0]
            meta = top.endswith(".dist-info") and name.endswith("/METADATA")
            if meta or ((name.endswith(".py") or stubs and name.endswith(".pyi")) and top in roots):
                out.writestr(name, src.read(info))
    tmp.replace(target)
    return target


def derive(
    package: str, archives: list[tuple[str, Path]], cache: FactsCache, log: Callable[[str], None] = print
) -> dict[str, Any]:
    roots, _, bulk = PACKAGES.get(package, ((package,), "0", ()))
    h = History([v for v, _ in archives])
    for i, (v, path) in enumerate(archives):
        rel = read_release(path, roots, cache, SKIP.get(package, ()), package in STUBS)
        record(h, i, rel, roots, bulk)
        log(f"{package} {v}: {len(rel.modules)} modules")
    return document(h, package, roots)


def write(doc: dict[str, Any], out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc, separators=(",", ":"), sort_keys=False).encode()
    target = out / f"{doc['package']}.json.gz"
    target.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    _write_call_tables(doc, out)
    return target.stat().st_size


# --------------------------------------------------------------------------------------------
# Pins: the releases of B that a release of A requires (its wheel's Requires-Dist)

PINS_SCHEMA = "envdoctor.pins/1"
#: A -> (the first release read, the targets B kept): those whose drift A's code meets (torch's
#: inductor imports triton's compiler; vLLM and SGLang call xformers' and FlashInfer's kernels)
PIN_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "torch": ("2.2.0", ("triton",)),
    "vllm": ("0.7.2", ("torch", "xformers", "flashinfer-python", "triton")),
    "xformers": ("0.0.24", ("torch",)),
    "sglang": ("0.4.0", ("torch", "flashinfer-python", "xformers", "torchao", "triton")),
    "flashinfer_python": ("0.2.0", ("torch",)),
    "torchao": ("0.3.0", ("torch",)),
    "verl": ("0.2", ("vllm", "sglang", "torch", "transformers")),
    "openrlhf": ("0.5.0", ("vllm", "torch", "transformers", "deepspeed")),
}
#: the platform the answer is for (a Linux x86-64 CUDA wheel, CPython 3.11); the extras a stack
#: installs with (SGLang's runtime is its ``srt`` extra, OpenRLHF's vLLM its ``vllm`` one)
_MARKER_ENV = {
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "sys_platform": "linux",
    "os_name": "posix",
    "python_version": "3.11",
    "python_full_version": "3.11.7",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}
_EXTRAS = ("", "srt", "vllm", "all")


def narrow_pins(metadata: str, targets: tuple[str, ...]) -> dict[str, str]:
    """The exact or bounded requirements (``==``, ``~=``, an upper bound) of ``targets`` in one
    release's METADATA, for the platform above; ``{dist: specifier}``."""
    from packaging.requirements import InvalidRequirement, Requirement

    out: dict[str, str] = {}
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        try:
            req = Requirement(line.split(":", 1)[1].strip())
        except InvalidRequirement:
            continue
        dist = dist_name(req.name)
        if dist not in targets or not req.specifier:
            continue
        if req.marker is not None and not any(
            req.marker.evaluate({**_MARKER_ENV, "extra": e}) for e in _EXTRAS
        ):
            continue
        ops = {sp.operator for sp in req.specifier}
        if ops & {"==", "===", "~=", "<", "<="} and dist not in out:
            out[dist] = str(req.specifier)
    return out


def _metadata(archive: Path) -> str:
    with zipfile.ZipFile(archive) as zf:
        name = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA")), None)
        return zf.read(name).decode("utf-8", "replace") if name else ""


def derive_pins(cache: Path, offline: bool, log: Callable[[str], None] = print) -> dict[str, Any]:
    """``{"schema", "pins": {A: {release: {B: specifier}}}}`` over ``PIN_SOURCES``' releases: the
    cache's wheels or extracts, else the METADATA alone read from the index (``CACHE/pins/A``)."""
    pins: dict[str, dict[str, dict[str, str]]] = {}
    for package, (since, targets) in PIN_SOURCES.items():
        got: dict[str, dict[str, str]] = {}
        floor = Version(since)
        archives = {
            v: path
            for folder in (cache, cache / "pins")
            for v, path in cached_releases(folder, package).items()
            if Version(v) >= floor
        }
        if not offline:
            for v, path in releases_of(
                package, cache / "pins", False, since, download=lambda p, v, d: remote_extract(p, v, d, ())
            ):
                archives.setdefault(v, path)
        for v in sorted(archives, key=Version):
            found = narrow_pins(_metadata(archives[v]), targets)
            if found:
                got[v] = found
        log(f"pins {package}: {len(got)} of {len(archives)} releases pin {', '.join(targets)}")
        if got:
            pins[dist_name(package)] = got
    return {"schema": PINS_SCHEMA, "pins": pins}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, required=True, help="the wheel cache (refresh_knowledge's)")
    ap.add_argument("--package", action="append", choices=sorted(PACKAGES), help="only these (repeatable)")
    ap.add_argument("--offline", action="store_true", help="the cache's wheels only: no index, no download")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET, help="bytes all files may take together")
    ap.add_argument("--pins", action="store_true", help="only the pins file (symbols/pins.json)")
    args = ap.parse_args(argv)
    cache_dir = args.cache.expanduser().resolve()
    if ROOT in (cache_dir, *cache_dir.parents):
        ap.error("--cache must be outside the repository (never commit wheels)")
    if args.pins:
        doc = derive_pins(cache_dir, args.offline)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "pins.json").write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
        return 0
    for package in args.package or list(PACKAGES):
        facts = FactsCache(cache_dir / f"symbols-facts-{package}.pickle")
        roots = PACKAGES[package][0]
        remote = (lambda p, v, d, r=roots: remote_extract(p, v, d, r)) if package in REMOTE else None
        archives = releases_of(package, cache_dir, args.offline, PACKAGES[package][1], download=remote)
        if not archives:
            print(f"{package}: no release in the cache", file=sys.stderr)
            continue
        doc = derive(package, archives, facts)
        facts.save()
        size = write(doc, args.out)
        print(f"{package}: {len(archives)} releases ({archives[0][0]} .. {archives[-1][0]}), {size} bytes")
    total = sum(p.stat().st_size for p in args.out.glob("*.json.gz"))
    print(f"all: {total} bytes (budget {args.budget})")
    if total > args.budget:
        print("over the budget", file=sys.stderr)
        return 1
    return 0


def _write_call_tables(doc: dict, out: Path) -> None:
    """The small per-class tables ``check`` reads (CALL_TABLES: GRPOTrainer's signatures per
    release), from the history just written."""
    from envdoctor.knowledge.symbol_history import CALL_TABLES, History, call_table

    h = History(str(doc["package"]), [str(r) for r in doc["releases"]], doc["symbols"].get("m") or {})
    for cls in CALL_TABLES.get(h.package, ()):
        table = call_table(h, cls)
        (out / f"{h.package}.{cls}.json").write_text(
            json.dumps(table, sort_keys=True, separators=(",", ":")) + "\n"
        )


if __name__ == "__main__":
    sys.exit(main())
