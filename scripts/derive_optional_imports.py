#!/usr/bin/env python3
"""Derive the optional-import index of the stack's packages from their git histories (maintainer command).

A package that supports another only when it is installed imports its names under a guard:
``if is_peft_available(): from peft import LoraConfig`` or ``try: import deepspeed`` / ``except
ImportError``. Where the other package is missing, the name stays undefined and the first use raises
``NameError: name 'LoraConfig' is not defined`` inside the package: a message that names no package.
This command records, per release of a package, each module-level name imported under such a guard
(the module that imports it, the top-level module it comes from, the guard), and the requirement
the release's packaging declares for that module's distribution (an extra or ``install_requires``:
``setup.py``'s literal lists, ``setup.cfg``, ``pyproject.toml``), so that triage
(``envdoctor/triage/optional.py``) names the package to install and the version the package asks.

It writes ``rules/knowledge/optional_imports.json.gz`` (schema ``envdoctor.optional_imports/1``)::

    {"schema": …, "packages": {"trl": {"source": "huggingface/trl", "releases": ["0.7.0", …],
        "imports": [[module, name, provider, guard, [[r0, r1], …]], …],
        "requires": [[provider_distribution, requirement, extra, [[r0, r1], …]], …]}}}

``module``: the file inside the package root (``trainer/utils.py``); ``provider``: the top-level
import name (``peft``); ``guard``: the guard's call (``is_peft_available``) or ``except ImportError``;
``r0``/``r1`` index ``releases`` (both included); ``extra``: the extra's name, "" for a requirement.

Usage (the mirrors: ``git clone --mirror URL``, or the session's ``fetch`` tool):

    python scripts/derive_optional_imports.py --mirrors /work/.mirror [--package trl ...]

Offline: it reads the git directories only (``git`` on the path). Tests run ``derive`` on a small
repository built in a temporary folder (tests/scripts/test_derive_optional_imports.py).
"""

from __future__ import annotations

import argparse
import ast
import configparser
import gzip
import json
import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "optional_imports.json.gz"
SCHEMA = "envdoctor.optional_imports/1"
SINCE = "2023-01-01"
_TAG = r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$"
#: distribution -> (mirror folder, repository, package root, import name, release-tag pattern; "":
#: the commits that set each version line, for the date-versioned packages)
PACKAGES: dict[str, tuple[str, str, str, str, str]] = {
    "trl": ("huggingface+trl", "huggingface/trl", "trl", "trl", _TAG),
    "accelerate": ("huggingface+accelerate", "huggingface/accelerate", "src/accelerate", "accelerate", _TAG),
    "peft": ("huggingface+peft", "huggingface/peft", "src/peft", "peft", _TAG),
    "deepspeed": ("deepspeedai+DeepSpeed", "deepspeedai/DeepSpeed", "deepspeed", "deepspeed", _TAG),
    "unsloth": ("unslothai+unsloth", "unslothai/unsloth", "unsloth", "unsloth", ""),
    "unsloth-zoo": ("unslothai+unsloth-zoo", "unslothai/unsloth-zoo", "unsloth_zoo", "unsloth_zoo", ""),
    "llamafactory": (
        "hiyouga+LLaMA-Factory",
        "hiyouga/LLaMA-Factory",
        "src/llamafactory",
        "llamafactory",
        _TAG,
    ),
    "ms-swift": ("modelscope+ms-swift", "modelscope/ms-swift", "swift", "swift", _TAG),
    "verl": ("verl-project+verl", "verl-project/verl", "verl", "verl", _TAG),
    "openrlhf": ("OpenRLHF+OpenRLHF", "OpenRLHF/OpenRLHF", "openrlhf", "openrlhf", _TAG),
}
SINCE_OF = {"unsloth": "2025-02-01", "unsloth-zoo": "2025-02-01"}  # as the raise-site index
_GUARD = re.compile(r"^is_(\w+)_available$")
_IMPORT_ERRORS = frozenset(("ImportError", "ModuleNotFoundError", "Exception"))
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts: scripts/sibling.py
from sibling import load as _load  # noqa: E402

frames = _load("derive_frame_index")  # releases and blobs: the same reading of the mirrors


def _guard_of(test: ast.expr) -> str | None:
    """The ``is_X_available`` call an ``if`` tests (alone or in an ``and``), or None; a negated test
    (``if not is_x_available():``) guards the branch taken without it."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return None
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if _GUARD.match(name):
                return name
    return None


def _catches_import(node: ast.Try) -> bool:
    for h in node.handlers:
        kinds = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type] if h.type is not None else []
        names = {k.id if isinstance(k, ast.Name) else getattr(k, "attr", "") for k in kinds}
        if h.type is None or names & _IMPORT_ERRORS:
            return True
    return False


def guarded_imports(source: str, own: str) -> list[tuple[str, str, str]]:
    """The module-level names ``source`` imports under a guard: (name, provider, guard); imports of
    the package's own modules (relative, or of ``own``) are left out."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out: list[tuple[str, str, str]] = []

    def names(stmts: list[ast.stmt], guard: str) -> None:
        for s in stmts:
            if isinstance(s, ast.ImportFrom) and not s.level and s.module:
                top = s.module.split(".")[0]
                if top != own:
                    out.extend((a.asname or a.name, top, guard) for a in s.names if a.name != "*")
            elif isinstance(s, ast.Import):
                for a in s.names:
                    top = a.name.split(".")[0]
                    if top != own:
                        out.append((a.asname or top, top, guard))
            elif isinstance(s, ast.If):
                inner = _guard_of(s.test) or guard
                names(s.body, inner)
                names(s.orelse, guard)
            elif isinstance(s, ast.Try):
                names(s.body, "except ImportError" if _catches_import(s) else guard)

    def walk(stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if isinstance(s, ast.If):
                if "TYPE_CHECKING" in ast.dump(s.test):
                    continue
                guard = _guard_of(s.test)
                if guard is not None:
                    names(s.body, guard)
                else:
                    walk(s.body)
                walk(s.orelse)
            elif isinstance(s, ast.Try) and _catches_import(s):
                names(s.body, "except ImportError")

    walk(tree.body)
    return out


def _literal_reqs(node: ast.AST) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [str(e.value) for e in node.elts if isinstance(e, ast.Constant)]
    return None


def _setup_py(text: str) -> dict[str, list[str]]:
    """``setup.py``'s literal extras (a dict of lists assigned to a name or passed as
    ``extras_require``) and ``install_requires`` (key "")."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=False):
                reqs = _literal_reqs(v)
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and reqs is not None:
                    out.setdefault(k.value, reqs)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            reqs = _literal_reqs(node.value)
            if reqs is None:
                continue
            if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant):
                out.setdefault(str(t.slice.value), reqs)
            elif isinstance(t, ast.Name) and "REQUIRE" in t.id.upper() and "EXTRA" not in t.id.upper():
                out.setdefault("", reqs)
        elif isinstance(node, ast.keyword) and node.arg == "install_requires":
            reqs = _literal_reqs(node.value)
            if reqs is not None:
                out[""] = reqs
    return out


def _setup_cfg(text: str) -> dict[str, list[str]]:
    cp = configparser.ConfigParser()
    try:
        cp.read_string(text)
    except configparser.Error:
        return {}
    out: dict[str, list[str]] = {}
    if cp.has_option("options", "install_requires"):
        out[""] = [x.strip() for x in cp.get("options", "install_requires").splitlines() if x.strip()]
    if cp.has_section("options.extras_require"):
        for extra, value in cp.items("options.extras_require"):
            out[extra] = [x.strip() for x in value.splitlines() if x.strip()]
    return out


def _pyproject(text: str) -> dict[str, list[str]]:
    try:
        project = tomllib.loads(text).get("project") or {}
    except tomllib.TOMLDecodeError:
        return {}
    out: dict[str, list[str]] = {"": list(project.get("dependencies") or [])}
    out.update({k: list(v) for k, v in (project.get("optional-dependencies") or {}).items()})
    return out if any(out.values()) else {}


def requirements(files: dict[str, str]) -> dict[str, list[str]]:
    """A release's declared requirements: extra ("" for the base) -> requirement strings, from its
    packaging files' text (``files``: file name -> text)."""
    out: dict[str, list[str]] = {}
    for name, parse in (("pyproject.toml", _pyproject), ("setup.cfg", _setup_cfg), ("setup.py", _setup_py)):
        if name in files:
            for extra, reqs in parse(files[name]).items():
                out.setdefault(extra, reqs)
    return out


def _dist(requirement: str) -> str:
    m = _REQ_NAME.match(requirement)
    return m[1].lower().replace("_", "-") if m else ""


def _ranges(indices: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in sorted(indices):
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def derive(git_dir: Path, root: str, own: str, tags: str = _TAG, since: str = SINCE) -> dict[str, object]:
    """The index of one package (module docstring)."""
    releases = (
        frames.tag_releases(git_dir, tags, since) if tags else frames.bump_releases(git_dir, (root,), since)
    )
    blobs = frames.Blobs(git_dir)
    parsed: dict[str, list[tuple[str, str, str]]] = {}
    seen: dict[tuple[str, str, str, str], list[int]] = {}
    reqs_seen: dict[tuple[str, str, str], list[int]] = {}
    try:
        for i, (_, commit) in enumerate(releases):
            for module, sha in frames._files(git_dir, commit, (root,)).items():
                if sha not in parsed:
                    parsed[sha] = guarded_imports(blobs.get(sha).decode("utf-8", "replace"), own)
                for name, provider, guard in parsed[sha]:
                    seen.setdefault((module, name, provider, guard), []).append(i)
            packaging = {}
            for f in ("pyproject.toml", "setup.cfg", "setup.py"):
                text = blobs.get(f"{commit}:{f}")
                if text:
                    packaging[f] = text.decode("utf-8", "replace")
            for extra, reqs in requirements(packaging).items():
                for r in reqs:
                    dist = _dist(r)
                    if dist and dist != own.replace("_", "-"):
                        reqs_seen.setdefault((dist, r.strip(), extra), []).append(i)
    finally:
        blobs.close()
    return {
        "releases": [v for v, _ in releases],
        "imports": [[*k, _ranges(v)] for k, v in sorted(seen.items())],
        "requires": [[*k, _ranges(v)] for k, v in sorted(reqs_seen.items())],
    }


def write(data: dict[str, object], out: Path) -> int:
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    out.write_bytes(gzip.compress(raw, mtime=0))
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", type=Path, required=True, help="folder of mirrors named owner+name/repo")
    ap.add_argument("--package", action="append", help="only these packages (default: all of PACKAGES)")
    ap.add_argument("--since", default=SINCE)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    packages: dict[str, object] = {}
    for dist in args.package or list(PACKAGES):
        folder, repo, root, own, tags = PACKAGES[dist]
        base = args.mirrors / folder
        git_dir = base / "repo" if (base / "repo").is_dir() else base
        if not git_dir.is_dir():
            print(f"{dist}: no mirror at {base}, left out")
            continue
        data = derive(git_dir, root, own, tags, since=max(args.since, SINCE_OF.get(dist, "")))
        packages[dist] = {"source": repo, **data}
        print(f"{dist}: {len(data['releases'])} releases, {len(data['imports'])} guarded imports")  # type: ignore[arg-type]
    size = write({"schema": SCHEMA, "packages": packages}, args.out)
    print(f"wrote {args.out} ({size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
