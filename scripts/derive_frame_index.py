#!/usr/bin/env python3
"""Derive the frame index of the stack's packages from their git histories (maintainer command).

A traceback's frame (a package file, a line number, a function, the source line when the log
prints it) places the running code in the releases whose file has that function spanning that
line, with that text on it. This command records, per release of a package, where each function
of each file lies and a short hash of each of its lines, so that triage can intersect a log's
frames into the range of releases the run had (envdoctor/triage/frameversions.py) when the log
shows no version.

Releases: ``--tags REGEX`` (one group: the version; pre- and dev releases left out), else the
package's own version line (the commit that first sets ``__version__ = "2025.4.3"`` in a ``.py``
file or ``version = "…"`` in ``pyproject.toml``: date-versioned packages without tags per release,
unsloth and unsloth_zoo). Only releases made since ``--since`` (older ones no GRPO user runs).

Each release's ``.py`` files under the package's folders are read at the release's commit (one
``git cat-file --batch`` for all of them; a blob seen at an earlier release is parsed once): the
functions (``ast``; nested ones named ``outer.<locals>.inner``; a function's lines include its
decorators) and, per line, a short hash of its text without whitespace and with one kind of
quote (``line_hash``: one hex digit, ``--digits``; a false fit only widens a range, never drops the
true release). It writes ``rules/knowledge/frames/DIST.json.gz`` (schema
``envdoctor.frames/1``)::

    {"schema": …, "package": "trl", "source": "huggingface/trl", "head": "<sha>",
     "releases": ["0.14.0", …],                       # oldest first
     "digits": 1, "bodies": ["a1f03…", …],            # a function's line hashes, ``digits`` hex digits a line
     "files": {"trainer/grpo_trainer.py": {"GRPOTrainer._generate": [[r0, r1, first, body], …]}}}

A row says: in releases ``r0`` to ``r1`` (indexes into ``releases``, both included) the function
spans lines ``first`` to ``first + len(body) / digits - 1`` with the line hashes of ``bodies[body]``. A
function absent from a release has no row covering it. Budget: 1.9 MB for all files together
(``--budget``; the command fails above it).

Usage (the mirrors: ``git clone --mirror URL``, or the session's ``fetch`` tool):

    python scripts/derive_frame_index.py --all --mirrors /work/.mirror      # every package of PACKAGES
    python scripts/derive_frame_index.py --git-dir DIR --package trl --root trl --tags '^v(\\d[\\w.]*)$'

    python scripts/derive_frame_index.py --wheels DIR --package vllm --root vllm  # from wheels

The shipped transformers and vLLM indexes (2026-11-29) are read from wheels, every release
(transformers 4.40.0-5.24.0: ``pip download --no-deps --only-binary=:all: transformers==V -d
WHEELS/transformers``; vLLM 0.7.0-0.33.0: the same with scripts/derive_raise_sites.py's platform
flags, each wheel cut to its ``vllm/*.py`` files before the next is fetched), with ``FILES_OF``'s
selection::

    python scripts/derive_frame_index.py --wheels WHEELS/transformers --package transformers \
        --root transformers --source huggingface/transformers
    python scripts/derive_frame_index.py --wheels WHEELS/vllm --package vllm --root vllm \
        --source vllm-project/vllm

``--wheels DIR``: the releases are the package's wheels in DIR (``DIST-VERSION-*.whl``, oldest
first; fetched with ``pip download --no-deps --only-binary=:all:``, see
scripts/derive_raise_sites.py), their ``.py`` files read with ``zipfile`` (``WheelReleases``; a
root is the installed folder) instead of a git history (``GitReleases``): one code path.

Offline: it reads the git directory (``git`` on the path) or the wheels only.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import gzip
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/gitread.py
from gitread import git  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "frames"
SCHEMA = "envdoctor.frames/1"
BUDGET = 2_700_000  # 2.60 MB with transformers and vllm (378 KB, 381 KB; 2026-11-29)
SINCE = "2024-01-01"
MAX_FILE = 2_000_000  # a larger .py file is passed over (generated tables)
DIGITS = 1  # hex digits of a line's hash

_TAG = r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$"
#: distribution -> (mirror folder (owner+name), repository, folders of its import packages in the
#: repository (module paths are relative to them), release-tag pattern or "" for the version line)
PACKAGES: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "trl": ("huggingface+trl", "huggingface/trl", ("trl",), _TAG),
    "verl": ("volcengine+verl", "volcengine/verl", ("verl",), _TAG),
    "unsloth": ("unslothai+unsloth", "unslothai/unsloth", ("unsloth",), ""),
    "unsloth-zoo": ("unslothai+unsloth-zoo", "unslothai/unsloth-zoo", ("unsloth_zoo",), ""),
    "llamafactory": ("hiyouga+LLaMA-Factory", "hiyouga/LLaMA-Factory", ("src/llamafactory",), _TAG),
    "openrlhf": ("OpenRLHF+OpenRLHF", "OpenRLHF/OpenRLHF", ("openrlhf",), _TAG),
    "areal": ("inclusionAI+AReaL", "inclusionAI/AReaL", ("areal",), _TAG),  # not the legacy realhf
    "nemo-rl": ("NVIDIA-NeMo+RL", "NVIDIA-NeMo/RL", ("nemo_rl",), r"^v(\d+\.\d+\.\d+)$"),
    "skyrl-train": (
        "NovaSky-AI+SkyRL",
        "NovaSky-AI/SkyRL",
        ("skyrl-train/skyrl_train", "skyrl_train"),
        r"^skyrl_train-v(\d+\.\d+\.\d+)$",
    ),
    "accelerate": ("huggingface+accelerate", "huggingface/accelerate", ("src/accelerate",), _TAG),
    "peft": ("huggingface+peft", "huggingface/peft", ("src/peft",), _TAG),
    "deepspeed": (
        "deepspeedai+DeepSpeed",
        "deepspeedai/DeepSpeed",
        ("deepspeed", "op_builder>ops/op_builder"),
        _TAG,
    ),
    # its mirror (1.3 GB) is past what the session's fetch brings; derived where one is at hand
    "transformers": ("huggingface+transformers", "huggingface/transformers", ("src/transformers",), _TAG),
}
#: the files (``fnmatch`` patterns of the path inside the package) indexed of a large package: those
#: a training or generation traceback passes through (the budget); a frame in another file places
#: nothing (``FrameIndex.fits``: None), it never narrows a range
FILES_OF: dict[str, tuple[str, ...]] = {
    "deepspeed": (
        "__init__.py",
        "runtime/*",
        "ops/op_builder/*",
        "ops/adam/*",
        "comm/*",
        "accelerator/*",
        "utils/*",
        "launcher/*",
        "checkpoint/*",
    ),
    # the modules a trainer (TRL, Unsloth, verl) calls into and a training or generation step
    # crosses: Trainer and its arguments, model and config loading with the auto classes,
    # tokenization and processing, generate(), the integrations Trainer drives (DeepSpeed, PEFT,
    # FSDP, attention kernels), the import and version checks; the model files of the families
    # GRPO recipes train most (llama, qwen2, qwen3); other model files, modular_*, TF/Flax and
    # continuous batching left out (2026-11-29: 613 KB with every qwen/gemma/mistral file and all
    # of generation/ and integrations/)
    "transformers": (
        "__init__.py",
        "trainer*.py",
        "training_args.py",
        "modeling_utils.py",
        "configuration_utils.py",
        "tokenization_utils*.py",
        "processing_utils.py",
        "hf_argparser.py",
        "dynamic_module_utils.py",
        "modeling_rope_utils.py",
        "modeling_flash_attention_utils.py",
        "cache_utils.py",
        "data/data_collator.py",
        "generation/utils.py",
        "generation/configuration_utils.py",
        "integrations/deepspeed.py",
        "integrations/peft.py",
        "integrations/accelerate.py",
        "integrations/fsdp.py",
        "integrations/integration_utils.py",
        "integrations/sdpa_attention.py",
        "integrations/flash_attention.py",
        "integrations/bitsandbytes.py",
        "utils/import_utils.py",
        "utils/versions.py",
        "utils/deprecation.py",
        "utils/generic.py",
        "models/auto/*",
        "models/llama/modeling_llama.py",
        "models/qwen2/modeling_qwen2.py",
        "models/qwen3/modeling_qwen3.py",
    ),
    # the engine's path from ``LLM(...)`` / ``vllm serve`` / TRL's ``vllm-serve`` down to the worker
    # that runs the model and takes TRL's weight sync: entrypoints, engines (V0 and V1),
    # executors, workers, the communicators, the sleep-mode allocator, config and argument
    # parsing, the model registry and loader, LoRA's manager; model files, kernels (LoRA's
    # too), speculative decoding and compilation configs left out (2026-11-29: 451 KB with them)
    "vllm": (
        "__init__.py",
        "utils.py",
        "utils/__init__.py",
        "config.py",
        "config/__init__.py",
        "config/model.py",
        "config/vllm.py",
        "config/parallel.py",
        "config/cache.py",
        "config/load.py",
        "config/lora.py",
        "sampling_params.py",
        "entrypoints/llm.py",
        "entrypoints/utils.py",
        "entrypoints/openai/api_server.py",
        "engine/*",
        "v1/engine/*",
        "executor/*",
        "v1/executor/*",
        "worker/worker.py",
        "worker/worker_base.py",
        "v1/worker/gpu_worker.py",
        "v1/worker/worker_base.py",
        "distributed/parallel_state.py",
        "distributed/utils.py",
        "distributed/device_communicators/pynccl*.py",
        "device_allocator/*",
        "transformers_utils/config.py",
        "transformers_utils/tokenizer.py",
        "model_executor/models/registry.py",
        "model_executor/model_loader/*",
        "lora/models.py",
        "lora/model_manager.py",
        "lora/worker_manager.py",
        "lora/request.py",
        "lora/utils.py",
    ),
}
#: a later start for the date-versioned packages, which release every few days (the budget):
#: Unsloth's GRPO support came with 2025.2
SINCE_OF = {"unsloth": "2025-02-01", "unsloth-zoo": "2025-02-01"}
_BUMP_PY = re.compile(r"""^\+\s*__version__\s*=\s*["']([0-9][\w.+-]*)["']""", re.M)
_BUMP_TOML = re.compile(r"""^\+version\s*=\s*["']([0-9][\w.+-]*)["']""", re.M)


def _version(text: str) -> Version | None:
    try:
        v = Version(text)
    except InvalidVersion:
        return None
    return None if v.is_prerelease or v.is_devrelease else v


def line_hash(line: str, digits: int = DIGITS) -> str:
    """``digits`` hex digits of a source line as a traceback prints it: the text without whitespace
    and with one kind of quote (envdoctor/knowledge/frame_index.py hashes a frame's line the same way)."""
    bare = "".join(line.split()).replace("'", '"')
    return hashlib.blake2s(bare.encode(), digest_size=1).hexdigest()[:digits]


def spans(source: str) -> list[tuple[int, int, str]]:
    """The functions of ``source`` as (first line, last line, qualified name); a function's lines
    include its decorators; nested functions are named ``outer.<locals>.inner``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if isinstance(child, ast.ClassDef):
                    walk(child, name + ".")
                else:
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    out.append((first, child.end_lineno or child.lineno, name))
                    walk(child, name + ".<locals>.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def tag_releases(git_dir: Path, pattern: str, since: str) -> list[tuple[str, str]]:
    """(version, commit) of the release tags matching ``pattern`` made since ``since``, oldest first."""
    rx = re.compile(pattern)
    found: list[tuple[Version, str, str]] = []
    fmt = (
        "%(refname:short)%1f%(*objectname)%1f%(objectname)%1f%(*committerdate:short)%1f%(committerdate:short)"
    )
    for row in git(git_dir, "for-each-ref", f"--format={fmt}", "refs/tags").splitlines():
        tag, peeled, sha, peeled_date, date = (row.split("\x1f") + [""] * 5)[:5]
        m = rx.match(tag)
        v = _version(m[1]) if m else None
        if v is None or m is None or (peeled_date or date) < since:
            continue
        found.append((v, m[1], peeled or sha))
    found.sort()
    return [(version, sha) for _, version, sha in found]


def bump_releases(
    git_dir: Path, roots: tuple[str, ...], since: str, ref: str = "HEAD"
) -> list[tuple[str, str]]:
    """(version, commit) of the first-parent commits that first set each version line, oldest first."""
    specs = [f":(glob){r}/**/*.py" for r in roots] + ["pyproject.toml"]
    out = git(
        git_dir,
        "log",
        "--first-parent",
        "--reverse",
        "-p",
        "-U0",
        "--no-color",
        f"--since={since}",
        "--format=\x1eCOMMIT %H",
        "-G",
        r"(__version__|^version)\s*=",
        ref,
        "--",
        *specs,
    )
    seen: dict[str, str] = {}
    for chunk in out.split("\x1eCOMMIT ")[1:]:
        sha = chunk[:40]
        for m in (*_BUMP_PY.finditer(chunk), *_BUMP_TOML.finditer(chunk)):
            v = _version(m[1])
            if v is not None and str(v) not in seen:
                seen[str(v)] = sha
    return sorted(seen.items(), key=lambda kv: Version(kv[0]))


class Blobs:
    """``git cat-file --batch``: objects by name, one process for all of them."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def get(self, name: str) -> bytes:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{name}\n".encode())
        self.proc.stdin.flush()
        head = self.proc.stdout.readline().decode().split()
        if len(head) < 3 or head[1] == "missing":
            return b""
        size = int(head[2])
        return self.proc.stdout.read(size + 1)[:size]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def _listing(
    git_dir: Path, commit: str, roots: tuple[str, ...], include: tuple[str, ...] = ()
) -> dict[str, tuple[str, str]]:
    """The ``.py`` files under ``roots`` at ``commit``: module path (inside its root) -> (blob sha,
    path in the repository); with ``include``, only the module paths matching one of its
    ``fnmatch`` patterns. A root ``DIR>PREFIX`` is a folder the package installs under ``PREFIX``
    (DeepSpeed's ``op_builder``, a link in the repository, is ``deepspeed/ops/op_builder`` once
    installed)."""
    out: dict[str, tuple[str, str]] = {}
    where = [(r.partition(">")[0].strip("/"), r.partition(">")[2].strip("/")) for r in roots]
    listing = git(git_dir, "ls-tree", "-r", "--full-tree", commit, "--", *(d for d, _ in where))
    for row in listing.splitlines():
        meta, _, path = row.partition("\t")
        parts = meta.split()
        if len(parts) < 3 or parts[1] != "blob" or parts[0] == "120000" or not path.endswith(".py"):
            continue
        root = next(((d, pre) for d, pre in where if path.startswith(d + "/")), None)
        if root is None:
            continue
        module = "/".join(x for x in (root[1], path[len(root[0]) + 1 :]) if x)
        if not include or any(fnmatch.fnmatchcase(module, p) for p in include):
            out.setdefault(module, (parts[2], path))
    return out


def _files(
    git_dir: Path, commit: str, roots: tuple[str, ...], include: tuple[str, ...] = ()
) -> dict[str, str]:
    """``_listing``'s module path -> blob sha."""
    return {m: sha for m, (sha, _) in _listing(git_dir, commit, roots, include).items()}


class GitReleases:
    """A package's releases read from its git directory (``tag_releases`` or ``bump_releases``):
    each release's ``.py`` files and their text; ``history``: commits between releases can be
    searched (a raise's removal)."""

    history = True

    def __init__(
        self, git_dir: Path, roots: tuple[str, ...], tags: str = "", since: str = SINCE, ref: str = "HEAD"
    ) -> None:
        self.git_dir = git_dir
        self.releases = (
            tag_releases(git_dir, tags, since)
            if tags
            else bump_releases(git_dir, tuple(r.partition(">")[0] for r in roots), since, ref)
        )
        self.head = git(git_dir, "rev-parse", ref).strip()
        self._blobs: Blobs | None = None

    def files(
        self, ref: str, roots: tuple[str, ...], include: tuple[str, ...] = ()
    ) -> dict[str, tuple[str, str]]:
        """Module path -> (a key of its text for ``read``, its path in the repository)."""
        return _listing(self.git_dir, ref, roots, include)

    def read(self, key: str) -> bytes:
        if self._blobs is None:
            self._blobs = Blobs(self.git_dir)
        return self._blobs.get(key)

    def close(self) -> None:
        if self._blobs is not None:
            self._blobs.close()


_WHEEL_NAME = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>\d[^-]*)-.*\.whl$")


def _dist_key(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel_releases(folder: Path, dist: str) -> list[tuple[str, str]]:
    """(version, wheel path) of ``dist``'s wheels in ``folder`` (``DIST-VERSION-*.whl``; pre- and
    dev releases left out; one wheel per version), oldest first."""
    found: dict[Version, tuple[str, str]] = {}
    for path in sorted(folder.glob("*.whl")):
        m = _WHEEL_NAME.match(path.name)
        if m is None or _dist_key(m["name"]) != _dist_key(dist):
            continue
        v = _version(m["version"])
        if v is not None and v not in found:
            found[v] = (m["version"], str(path))
    return [found[v] for v in sorted(found)]


class WheelReleases:
    """A package's releases read from its wheels (the package index's, ``pip download --no-deps``):
    the ``.py`` files of each wheel, read with ``zipfile`` (nothing installed or extracted). A
    root is the import package's folder as installed (``vllm``; a repository's ``src/`` is
    dropped, a ``DIR>PREFIX`` root is inside the package's folder already). No ``history``: the
    commits between releases are not in a wheel."""

    history = False

    def __init__(self, folder: Path, dist: str) -> None:
        self.releases = wheel_releases(folder, dist)
        self.head = ""
        self._zip: zipfile.ZipFile | None = None
        self._open = ""
        self._where: dict[str, str] = {}

    def _wheel(self, ref: str) -> zipfile.ZipFile:
        if self._zip is None or self._open != ref:
            self.close()
            self._zip, self._open = zipfile.ZipFile(ref), ref
        return self._zip

    def files(
        self, ref: str, roots: tuple[str, ...], include: tuple[str, ...] = ()
    ) -> dict[str, tuple[str, str]]:
        """Module path -> (a key of its text: CRC and size, for ``read``; its path in the wheel)."""
        zf = self._wheel(ref)
        where = [r.strip("/").removeprefix("src/") for r in roots if ">" not in r]
        self._where = {}
        out: dict[str, tuple[str, str]] = {}
        for info in zf.infolist():
            path = info.filename
            if info.is_dir() or not path.endswith(".py"):
                continue
            root = next((d for d in where if path.startswith(d + "/")), None)
            if root is None:
                continue
            module = path[len(root) + 1 :]
            if include and not any(fnmatch.fnmatchcase(module, p) for p in include):
                continue
            key = f"{info.CRC:08x}:{info.file_size}"
            self._where.setdefault(key, path)
            out.setdefault(module, (key, path))
        return out

    def read(self, key: str) -> bytes:
        path = self._where.get(key)
        return b"" if path is None or self._zip is None else self._zip.read(path)

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
        self._zip, self._open = None, ""


def release_reader(
    git_dir: Path | None,
    package: str,
    roots: tuple[str, ...],
    tags: str = "",
    since: str = SINCE,
    ref: str = "HEAD",
    wheels: Path | None = None,
) -> GitReleases | WheelReleases:
    """The releases of ``package``: its wheels in ``wheels`` where given, else its git directory."""
    if wheels is not None:
        return WheelReleases(wheels, package)
    assert git_dir is not None, "a git directory or a folder of wheels"
    return GitReleases(git_dir, roots, tags, since, ref)


def _functions(text: str, digits: int = DIGITS) -> dict[str, tuple[int, str]]:
    """A file's functions: qualified name -> (first line, line hashes); a name defined twice keeps
    its first definition."""
    lines = text.split("\n")
    out: dict[str, tuple[int, str]] = {}
    for first, last, name in spans(text):
        if name not in out:
            out[name] = (first, "".join(line_hash(x, digits) for x in lines[first - 1 : last]))
    return out


def derive(
    git_dir: Path | None,
    package: str,
    roots: tuple[str, ...],
    tags: str = "",
    since: str = SINCE,
    source: str = "",
    ref: str = "HEAD",
    digits: int = DIGITS,
    include: tuple[str, ...] = (),
    wheels: Path | None = None,
) -> dict[str, object]:
    """The frame index of ``package`` (the module docstring's layout), from its git directory or
    (``wheels``) from its wheels."""
    roots = tuple(r.strip("/") for r in roots)
    reader = release_reader(git_dir, package, roots, tags, since, ref, wheels)
    releases = reader.releases
    parsed: dict[str, dict[str, tuple[int, str]]] = {}
    bodies: dict[str, int] = {}
    # module -> function -> rows [r0, r1, first, body]
    files: dict[str, dict[str, list[list[int]]]] = {}
    for index, (_, commit) in enumerate(releases):
        for module, (key, _) in reader.files(commit, roots, include).items():
            fns = parsed.get(key)
            if fns is None:
                data = reader.read(key)
                fns = parsed[key] = (
                    _functions(data.decode("utf-8", "replace"), digits) if len(data) <= MAX_FILE else {}
                )
            by_name = files.setdefault(module, {})
            for name, (first, body) in fns.items():
                body_id = bodies.setdefault(body, len(bodies))
                rows = by_name.setdefault(name, [])
                last = rows[-1] if rows else None
                if last is not None and last[1] == index - 1 and last[2] == first and last[3] == body_id:
                    last[1] = index  # the same span and text as the release before: one run
                else:
                    rows.append([index, index, first, body_id])
    reader.close()
    return {
        "schema": SCHEMA,
        "package": package,
        "source": source,
        "head": reader.head,
        "since": since if reader.history else "",
        **({} if reader.history else {"read_from": "wheels"}),
        "releases": [v for v, _ in releases],
        **({"include": list(include)} if include else {}),
        "digits": digits,
        "bodies": sorted(bodies, key=lambda b: bodies[b]),
        "files": {m: fns for m, fns in sorted(files.items()) if fns},
    }


def write(data: dict[str, object], out: Path) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    blob = gzip.compress(json.dumps(data, separators=(",", ":"), sort_keys=True).encode(), 9, mtime=0)
    out.write_bytes(blob)
    return len(blob)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="every package of PACKAGES (needs --mirrors)")
    ap.add_argument("--mirrors", type=Path, help="folder of mirrors named owner+name/repo (or owner+name)")
    ap.add_argument("--only", action="append", default=[], help="with --all: this package only (repeatable)")
    ap.add_argument("--git-dir", type=Path)
    ap.add_argument(
        "--wheels",
        type=Path,
        help="a folder of the package's wheels (DIST-VERSION-*.whl): read instead of git",
    )
    ap.add_argument("--package")
    ap.add_argument("--root", action="append", default=[], help="a folder of the package in the repository")
    ap.add_argument(
        "--include", action="append", default=[], help="index only the files matching (fnmatch; repeatable)"
    )
    ap.add_argument("--tags", default="", help="release-tag pattern; its first group is the version")
    ap.add_argument("--source", default="", help="owner/name of the repository (recorded)")
    ap.add_argument("--since", default=SINCE)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument("--digits", type=int, default=DIGITS, choices=(1, 2), help="hex digits of a line's hash")
    args = ap.parse_args(argv)
    jobs: list[tuple[Path | None, str, tuple[str, ...], str, str, tuple[str, ...]]] = []
    if args.wheels and args.package and args.root:
        only = tuple(args.include) or FILES_OF.get(args.package, ())
        jobs.append((None, args.package, tuple(args.root), "", args.source, only))
    elif args.all:
        if args.mirrors is None:
            ap.error("--all needs --mirrors")
        for dist, (folder, repo, roots, tags) in PACKAGES.items():
            if args.only and dist not in args.only:
                continue
            base = args.mirrors / folder
            git_dir = base / "repo" if (base / "repo").is_dir() else base
            if not git_dir.is_dir():
                print(f"{dist}: no mirror at {base}; skipped", file=sys.stderr)
                continue
            jobs.append((git_dir, dist, roots, tags, repo, tuple(args.include) or FILES_OF.get(dist, ())))
    elif args.git_dir and args.package and args.root:
        only = tuple(args.include)
        jobs.append((args.git_dir, args.package, tuple(args.root), args.tags, args.source, only))
    else:
        ap.error(
            "give --all --mirrors DIR, --git-dir, --package and --root, or --wheels, --package and --root"
        )
    for git_dir, dist, roots, tags, repo, include in jobs:
        since = max(args.since, SINCE_OF.get(dist, args.since)) if args.all else args.since
        data = derive(
            git_dir, dist, roots, tags, since, repo, digits=args.digits, include=include, wheels=args.wheels
        )
        size = write(data, args.out / f"{dist}.json.gz")
        releases = data["releases"]
        assert isinstance(releases, list)
        span = f"{releases[0]}–{releases[-1]}" if releases else "none"
        print(f"{dist}: {len(releases)} releases ({span}), {len(data['bodies'])} bodies, {size} bytes")  # type: ignore[arg-type]
    total = sum(p.stat().st_size for p in args.out.glob("*.json.gz"))
    print(f"total {total} bytes in {args.out}")
    if total > args.budget:
        print(f"over the budget of {args.budget} bytes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
