#!/usr/bin/env python3
"""Derive the signature history of the stack's packages (maintainer command).

The symbol history (scripts/derive_symbol_history.py) says which releases have a function and
which parameter names it takes; it cannot say which parameters are required, nor how many a call
may pass by position. A ``TypeError`` raised where one package calls another is told by exactly
that: ``seed_worker() missing 2 required positional arguments``, ``_prepare_inputs() takes 2
positional arguments but 3 were given``, ``get_rope_index() missing 1 required positional argument:
'mm_token_type_ids'``. This command records, per package, the full parameter list of each function
and method **whose signature changed** between the releases read, as the distinct signatures and
the releases that have each.

Releases are read as scripts/derive_frame_index.py reads them (``release_reader``: a git
directory's release tags, or ``--wheels DIR``, the package index's wheels read with ``zipfile``);
nothing is installed or imported (``ast`` only); a file is parsed once per content.

Kept: module-level public functions, and the public methods, ``__init__``, ``__call__`` and
``forward`` of top-level classes (a ``Trainer`` subclass's ``_``-methods too: the hooks users
override and TRL calls, ``_prepare_inputs``, ``_get_train_sampler``), and the private functions and
methods another package of the stack calls (``rules/knowledge/cross_private.json``, from
scripts/derive_cross_private.py: TRL's and Unsloth's calls of vLLM's and transformers' internals;
recorded with those callers under ``callers``); only those whose signature is not the same in every
release that has them. Private modules (a ``_``-name in the path),
tests, vendored code are left out.

A signature is written the way Python's own ``def`` reads, one string, without ``self``/``cls``::

    "worker_id,num_workers=,rank="       # = : has a default
    "input_ids,*,cache_position=,**"     # * : keyword-only after it (or *args, "*args")
    "!x,y"                               # ! : a staticmethod (no bound first argument)
    "a,/,b"                              # / : positional-only before it

It writes ``rules/knowledge/signatures/DIST.json.gz`` (schema ``envdoctor.signatures/1``)::

    {"schema": …, "package": "transformers", "source": "…", "read_from": "wheels" | "git",
     "releases": ["4.46.3", …],                 # oldest first
     "functions": {"transformers.trainer_utils:seed_worker": [["worker_id", "0-20"],
                                                               ["worker_id,num_workers,rank", "21-40"]],
                   "transformers.models.qwen2.modeling_qwen2:Qwen2Model.forward": […]}}

Ranges are indices into ``releases`` (``"3-9,12"``, both ends included: the symbol history's
encoding). Budget: 1.5 MB for all files together (``--budget``; the command fails above it).
envdoctor reads them only in triage, only for a ``TypeError`` of a call's arguments
(envdoctor/triage/sighistory.py); the static check never does.

Usage (the mirrors: ``git clone --mirror URL``, or the session's ``fetch`` tool; the wheels:
``pip download --no-deps --only-binary=:all: transformers==V -d WHEELS/transformers``, the
platform flags for vLLM as in scripts/derive_raise_sites.py)::

    # the release tags of PACKAGES (peft, accelerate, deepspeed, flash-attn, bitsandbytes; each
    # from its own ``since``); ``--only DIST`` for one of them
    python scripts/derive_signature_history.py --all --mirrors /work/.mirror
    # the wheels (the last patch of each minor release; every liger-kernel release; unsloth and
    # unsloth-zoo the last release of each month: no release tags to read)
    python scripts/derive_signature_history.py --wheels WHEELS/trl --package trl --root trl
    python scripts/derive_signature_history.py --wheels WHEELS/transformers --package transformers \
        --root transformers
    python scripts/derive_signature_history.py --wheels WHEELS/vllm --package vllm --root vllm
    python scripts/derive_signature_history.py --wheels WHEELS/liger-kernel --package liger-kernel \
        --root liger_kernel        # unsloth (--root unsloth), unsloth-zoo (--root unsloth_zoo) alike
    python scripts/derive_signature_history.py --git-dir DIR --package trl --root trl --tags '^v(\\d[\\w.]*)$'

Offline: it reads the git directory (``git`` on the path) or the wheels only.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "signatures"
SCHEMA = "envdoctor.signatures/1"
BUDGET = 1_500_000
SINCE = "2024-06-01"
MAX_FILE = 2_000_000


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts: scripts/sibling.py
from sibling import load as _load  # noqa: E402

frames = _load("derive_frame_index")  # the releases of a git history or of wheels: one reading

_TAG = r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$"
#: the packages ``--all`` reads from their mirrors' release tags: distribution -> (mirror folder,
#: repository, folders of its import package, release-tag pattern, the oldest tag date read). TRL's
#: shipped history is read from its wheels (``--wheels``: the last patch of each minor release), so
#: ``--all`` leaves it alone.
PACKAGES: dict[str, tuple[str, str, tuple[str, ...], str, str]] = {
    "peft": ("huggingface+peft", "huggingface/peft", ("src/peft",), _TAG, SINCE),
    "accelerate": ("huggingface+accelerate", "huggingface/accelerate", ("src/accelerate",), _TAG, SINCE),
    # what accelerate, transformers and TRL call under ZeRO, transformers' attention, QLoRA
    "deepspeed": ("deepspeedai+DeepSpeed", "deepspeedai/DeepSpeed", ("deepspeed",), _TAG, SINCE),
    # from 2023-07: transformers' ``softcap=`` needs flash-attn 2.6, so 2.5 and before must be read
    "flash-attn": (
        "Dao-AILab+flash-attention",
        "Dao-AILab/flash-attention",
        ("flash_attn",),
        _TAG,
        "2023-07-01",
    ),
    "bitsandbytes": (
        "bitsandbytes-foundation+bitsandbytes",
        "bitsandbytes-foundation/bitsandbytes",
        ("bitsandbytes",),
        r"^v?(\d+\.\d+\.\d+)$",
        "2023-07-01",
    ),
}
#: the packages read from their wheels (past the mirrors): their repositories, recorded as ``source``
SOURCES = {
    "vllm": "vllm-project/vllm",
    "transformers": "huggingface/transformers",
    "trl": "huggingface/trl",
    # the wrappers and kernels users run TRL through (no release tags to read: their wheels)
    "liger-kernel": "linkedin/Liger-Kernel",
    "unsloth": "unslothai/unsloth",
    "unsloth-zoo": "unslothai/unsloth-zoo",
}
#: the private names other packages of the stack call (scripts/derive_cross_private.py's output):
#: kept, with their callers, as public functions are
CROSS = ROOT / "rules" / "knowledge" / "cross_private.json"
#: folders whose code is not an API any package calls
_SKIP = frozenset(
    {"tests", "test", "third_party", "thirdparty", "_vendor", "vendor", "vendored", "benchmarks"}
)
#: methods kept whatever their name
_METHODS = frozenset({"__init__", "__call__", "forward"})


def signature(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> str:
    """``fn``'s parameters as one string (module docstring), its bound first argument dropped."""
    deco = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in fn.decorator_list}
    static = method and "staticmethod" in deco
    a = fn.args
    pos = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    out: list[str] = []
    for i, (p, d) in enumerate(zip(pos, defaults, strict=True)):
        if i == 0 and method and not static:
            continue
        out.append(p.arg + ("=" if d is not None else ""))
        if a.posonlyargs and i == len(a.posonlyargs) - 1:
            out.append("/")
    if a.vararg:
        out.append("*" + a.vararg.arg)
    elif a.kwonlyargs:
        out.append("*")
    for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(p.arg + ("=" if d is not None else ""))
    if a.kwarg:
        out.append("**")
    return ("!" if static else "") + ",".join(out)


def functions(src: str, keep: frozenset[str] = frozenset()) -> dict[str, str]:
    """A module's kept functions (module docstring): qualified name -> signature; a name defined
    twice (``if``/``else`` branches) keeps its last definition. ``keep``: private names other
    packages call (kept as public ones are)."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, str] = {}
    for st in frames_flat(tree.body):
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            not st.name.startswith("_") or st.name in keep
        ):
            out[st.name] = signature(st, False)
        elif isinstance(st, ast.ClassDef) and not st.name.startswith("_"):
            hooks = st.name.endswith("Trainer")
            for sub in frames_flat(st.body):
                if not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                name = sub.name
                dunder = name.startswith("__") and name.endswith("__")
                if name in _METHODS or (not name.startswith("_")) or (hooks and not dunder) or name in keep:
                    out[f"{st.name}.{name}"] = signature(sub, True)
    return out


def frames_flat(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements of a body with those of its ``if`` / ``try`` blocks (definitions made under a
    version or an import check)."""
    out: list[ast.stmt] = []
    for st in body:
        out.append(st)
        if isinstance(st, ast.If):
            out += frames_flat(st.body) + frames_flat(st.orelse)
        elif isinstance(st, ast.Try):
            out += frames_flat(st.body) + frames_flat(st.orelse) + frames_flat(st.finalbody)
            for h in st.handlers:
                out += frames_flat(h.body)
    return out


def module_name(path: str, root: str) -> str | None:
    """``trainer/grpo_trainer.py`` under root ``trl`` -> ``trl.trainer.grpo_trainer``; None for a
    private, test or vendored module."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if any(p in _SKIP or (p.startswith("_") and p != "__init__") or not p.isidentifier() for p in parts):
        return None
    if parts and parts[-1].startswith("modular_"):
        return None  # transformers' sources its modeling files are generated from: never imported
    return ".".join([root, *parts])


def intervals(indices: list[int]) -> str:
    """``"0-3,7"``: sorted indices as inclusive runs."""
    runs: list[str] = []
    for i in indices:
        if runs and int(runs[-1].split("-")[-1]) == i - 1:
            runs[-1] = f"{runs[-1].split('-')[0]}-{i}"
        else:
            runs.append(str(i))
    return ",".join(runs)


def derive(
    git_dir: Path | None,
    package: str,
    roots: tuple[str, ...],
    tags: str = "",
    since: str = SINCE,
    source: str = "",
    wheels: Path | None = None,
    cross: Path | None = CROSS,
) -> dict[str, object]:
    """The signature history of ``package`` (the module docstring's layout); ``cross``: the private
    names other packages call (scripts/derive_cross_private.py), kept too."""
    roots = tuple(r.strip("/") for r in roots)
    root = roots[0].rsplit("/", 1)[-1]
    reader = frames.release_reader(git_dir, package, roots, tags, since, "HEAD", wheels)
    releases = reader.releases
    callers = cross_private(package, cross)
    keep = frozenset(callers)
    parsed: dict[str, dict[str, str]] = {}
    seen: dict[str, dict[str, list[int]]] = {}  # qualified name -> signature -> release indices
    for index, (_, ref) in enumerate(releases):
        for path, (key, _) in reader.files(ref, roots).items():
            module = module_name(path, root)
            if module is None:
                continue
            fns = parsed.get(key)
            if fns is None:
                data = reader.read(key)
                fns = parsed[key] = (
                    functions(data.decode("utf-8", "replace"), keep) if len(data) <= MAX_FILE else {}
                )
            for name, sig in fns.items():
                seen.setdefault(f"{module}:{name}", {}).setdefault(sig, []).append(index)
    reader.close()
    kept = {
        q: [[sig, intervals(ix)] for sig, ix in sorted(sigs.items(), key=lambda kv: kv[1][0])]
        for q, sigs in sorted(seen.items())
        if len(sigs) > 1
    }
    return {
        "schema": SCHEMA,
        "package": package,
        "source": source,
        "read_from": "git" if reader.history else "wheels",
        "releases": [v for v, _ in releases],
        "functions": kept,
        # the private names kept (other packages call them): name -> the packages that do
        "callers": {
            n: callers[n]
            for n in sorted({q.rsplit(".", 1)[-1].rsplit(":", 1)[-1] for q in kept})
            if n in callers
        },
    }


def cross_private(package: str, path: Path | None = CROSS) -> dict[str, list[str]]:
    """The private names of ``package`` other packages call, with those packages (the output of
    scripts/derive_cross_private.py; none without it)."""
    if path is None or not path.is_file():
        return {}
    doc = json.loads(path.read_text())
    names = (doc.get("callees") or {}).get(package) or {}
    return {str(k): [str(x) for x in v] for k, v in names.items() if isinstance(v, list)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--all", action="store_true", help="every package of PACKAGES (needs --mirrors)")
    ap.add_argument("--mirrors", type=Path, help="folder of mirrors named owner+name/repo (or owner+name)")
    ap.add_argument("--only", action="append", default=[], help="with --all: only these packages")
    ap.add_argument("--git-dir", type=Path)
    ap.add_argument("--wheels", type=Path, help="a folder of the package's wheels (instead of a git history)")
    ap.add_argument("--package")
    ap.add_argument("--root", action="append", default=[], help="the import package's folder")
    ap.add_argument("--tags", default=_TAG)
    ap.add_argument(
        "--since", help=f"the oldest tag date read (default: a package's own in PACKAGES, else {SINCE})"
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET, help="bytes all files may take together")
    args = ap.parse_args(argv)
    jobs: list[tuple[Path | None, str, tuple[str, ...], str, str, str]] = []
    if args.all:
        if args.mirrors is None:
            ap.error("--all needs --mirrors")
        unknown = sorted(set(args.only) - PACKAGES.keys())
        if unknown:
            ap.error(f"--only {', '.join(unknown)}: not read from release tags (PACKAGES); give --wheels")
        for dist, (folder, repo, roots, tags, since) in PACKAGES.items():
            if args.only and dist not in args.only:
                continue
            base = args.mirrors / folder
            git_dir = base / "repo" if (base / "repo").is_dir() else base
            if not git_dir.is_dir():
                print(f"{dist}: no mirror at {base}; skipped", file=sys.stderr)
                continue
            jobs.append((git_dir, dist, roots, tags, args.since or since, repo))
    elif args.package and args.root and (args.git_dir or args.wheels):
        source = SOURCES.get(args.package, "")
        jobs.append((args.git_dir, args.package, tuple(args.root), args.tags, args.since or SINCE, source))
    else:
        ap.error(
            "give --all --mirrors DIR, --git-dir, --package and --root, or --wheels, --package and --root"
        )
    for git_dir, dist, roots, tags, since, repo in jobs:
        data = derive(git_dir, dist, roots, tags, since, repo, wheels=args.wheels)
        size = frames.write(data, args.out / f"{dist}.json.gz")
        rel = data["releases"]
        assert isinstance(rel, list)
        span = f"{rel[0]}–{rel[-1]}" if rel else "none"
        print(
            f"{dist}: {len(rel)} releases ({span}), {len(data['functions'])} changed signatures, {size} bytes"
        )  # type: ignore[arg-type]
    total = sum(p.stat().st_size for p in args.out.glob("*.json.gz"))
    print(f"total {total} bytes in {args.out}")
    if total > args.budget:
        print("over the budget", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
