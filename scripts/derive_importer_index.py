#!/usr/bin/env python3
"""Derive the importer index of the stack's packages from their git histories (maintainer command).

``ImportError: cannot import name 'N' from 'B'`` names the exporter (B) and the name, never the
package whose code imported it (A): a log that keeps only that line, or a traceback cut above A's
frame. Which packages of the stack import ``N`` from ``B``, and in which of their releases, answers
the question the message leaves open: the importer whose later releases stopped importing it is the
one to upgrade (PEFT 0.17 imported ``HybridCache`` from transformers, which transformers 5 removed;
PEFT 0.18 no longer imports it), the pin of B only the other way.

This command records, per release of each importer package (``PACKAGES``, the releases read as
``derive_optional_imports.py`` reads them), every ``from M import N`` of another stack package
(``M``'s top-level module names one, ``envdoctor/triage/traceback.py``'s ``PACKAGES``) found in the
package's modules: at module level without a guard (``u``), under a guard (``g``: ``if
is_x_available():``, a release test ``if transformers_lt_4_56:``, ``try: … except ImportError``),
or inside a function (``l``: imported when
it runs). To keep the file small it stores only names some release of B lacks, by B's symbol
history (rules/knowledge/symbols/<B>.json.gz: a name its module binds in some releases only, or a
module some releases lack), and names of B's modules older than that history (it cannot tell).

It writes ``rules/knowledge/importers.json.gz`` (schema ``envdoctor.importers/1``)::

    {"schema": …, "packages": {"peft": {"source": "huggingface/peft", "releases": ["0.4.0", …],
        "imports": [[provider_dist, from_module, name, kind, [[r0, r1], …]], …]}}}

``kind``: ``u`` / ``g`` / ``l`` as above; ``r0``/``r1`` index ``releases`` (both included). The file
is reproducible byte for byte from the same mirrors and histories.

Usage (the mirrors: ``git clone --mirror URL``, or the session's ``fetch`` tool):

    python scripts/derive_importer_index.py --mirrors /work/.mirror [--package peft ...]

Offline: it reads the git directories only (``git`` on the path). Tests run ``derive`` on a small
repository built in a temporary folder (tests/triage/test_importers.py).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "importers.json.gz"
SCHEMA = "envdoctor.importers/1"

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts: scripts/sibling.py
from sibling import load as _load  # noqa: E402

optional = _load("derive_optional_imports")  # the packages, their mirrors and the guards' reading
frames = _load("derive_frame_index")  # releases and blobs: the same reading of the mirrors

_TAG = optional._TAG
#: distribution -> (mirror folder, repository, package root, import name, release-tag pattern)
PACKAGES: dict[str, tuple[str, str, str, str, str]] = {
    **optional.PACKAGES,
    "liger-kernel": (
        "linkedin+Liger-Kernel",
        "linkedin/Liger-Kernel",
        "src/liger_kernel",
        "liger_kernel",
        _TAG,
    ),
}
SINCE_OF = dict(optional.SINCE_OF)

Keep = Callable[[str, str, str], bool]
#: a test that reads a release or an availability (``if transformers_lt_4_56:``, ``if
#: is_transformers_version(">=", "4.50"):``, ``if version.parse(x) < …``): the branch runs only
#: with some releases of the other package
_VERSIONED = re.compile(r"version|_(?:lt|le|ge|gt|eq)_\d|_(?:less|greater|older|newer)_|_available\b", re.I)


def _versioned(test: ast.expr) -> bool:
    if optional._guard_of(test):
        return True
    words = [n.id for n in ast.walk(test) if isinstance(n, ast.Name)]
    words += [n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)]
    return any(_VERSIONED.search(w) for w in words)


def _providers() -> dict[str, str]:
    """Top-level module -> distribution, for the stack's packages (triage's table)."""
    sys.path.insert(0, str(ROOT))
    from envdoctor.triage.traceback import PACKAGES as NAMES

    return dict(NAMES)


def imports(source: str, own: str, providers: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """``source``'s ``from M import N`` of other stack packages: (provider distribution, M, N, kind);
    ``kind``: ``u`` module level, ``g`` under a guard (an availability or a release test, an
    ``except ImportError``), ``l`` inside a function. ``TYPE_CHECKING``
    blocks, relative imports, ``*`` and the package's own modules are left out."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out: list[tuple[str, str, str, str]] = []

    def visit(stmts: list[ast.stmt], kind: str) -> None:
        for s in stmts:
            if isinstance(s, ast.ImportFrom) and not s.level and s.module:
                top = s.module.split(".")[0]
                dist = providers.get(top)
                if top != own and dist is not None:
                    out.extend((dist, s.module, a.name, kind) for a in s.names if a.name != "*")
            elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(s.body, "l")
            elif isinstance(s, ast.ClassDef):
                visit(s.body, kind)
            elif isinstance(s, ast.If):
                if "TYPE_CHECKING" in ast.dump(s.test):
                    visit(s.orelse, kind)
                    continue
                guarded = "g" if _versioned(s.test) else kind
                visit(s.body, guarded)
                visit(s.orelse, guarded)
            elif isinstance(s, ast.Try):
                inner = "g" if optional._catches_import(s) else kind
                visit(s.body, inner)
                for h in s.handlers:
                    visit(h.body, "g")
                visit(s.orelse, kind)
                visit(s.finalbody, kind)
            elif isinstance(s, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
                visit(s.body, kind)
                visit(getattr(s, "orelse", []) or [], kind)

    visit(tree.body, "u")
    return out


def history_keep() -> Keep:
    """The filter of the stored names: B's symbol history shows some release of ``module`` without
    ``name`` (or without the module), or B has no history / the module is not in it (unknown)."""
    sys.path.insert(0, str(ROOT))
    from envdoctor.knowledge.symbol_history import history

    def keep(dist: str, module: str, name: str) -> bool:
        h = history(dist)
        if h is None:
            return False  # no history of B: triage cannot place the name's releases anyway
        scope = h.module(module)
        if not scope:
            return False
        have = h.name(module, name)
        return bool(have) and have & h.full != h.full

    return keep


def history_known() -> Keep:
    """B's history has ``module`` binding ``name`` in some release (the names an importer's change
    of its own imports can date where every release of B's history has them)."""
    sys.path.insert(0, str(ROOT))
    from envdoctor.knowledge.symbol_history import history

    def keep(dist: str, module: str, name: str) -> bool:
        h = history(dist)
        return h is not None and bool(h.name(module, name))

    return keep


def derive(
    git_dir: Path,
    root: str,
    own: str,
    tags: str = _TAG,
    since: str = optional.SINCE,
    keep: Keep | None = None,
    providers: dict[str, str] | None = None,
    known: Keep | None = None,
) -> dict[str, object]:
    """The index of one package (module docstring); ``keep``: which (B, module, name) to store
    (None: all); ``known``: names also stored where the package's own releases started or stopped
    importing them unguarded (B's history has them in every release it read: the importer's change
    dates them)."""
    providers = providers if providers is not None else _providers()
    releases = (
        frames.tag_releases(git_dir, tags, since) if tags else frames.bump_releases(git_dir, (root,), since)
    )
    blobs = frames.Blobs(git_dir)
    parsed: dict[str, list[tuple[str, str, str, str]]] = {}
    seen: dict[tuple[str, str, str, str], set[int]] = {}
    verdicts: dict[tuple[str, str, str], bool] = {}
    try:
        for i, (_, commit) in enumerate(releases):
            for _, sha in sorted(frames._files(git_dir, commit, (root,)).items()):
                if sha not in parsed:
                    parsed[sha] = imports(blobs.get(sha).decode("utf-8", "replace"), own, providers)
                for dist, module, name, kind in parsed[sha]:
                    key = (dist, module, name)
                    if key not in verdicts:
                        verdicts[key] = keep is None or keep(dist, module, name)
                    if verdicts[key] or known is not None:
                        seen.setdefault((dist, module, name, kind), set()).add(i)
    finally:
        blobs.close()
    if known is not None:
        every = set(range(len(releases)))
        unguarded: dict[tuple[str, str, str], set[int]] = {}
        for (dist, module, name, kind), rel in seen.items():
            if kind in ("u", "l"):
                unguarded.setdefault((dist, module, name), set()).update(rel)
        changed = {k for k, rel in unguarded.items() if rel != every and known(*k)}
        seen = {k: v for k, v in seen.items() if verdicts[k[:3]] or k[:3] in changed}
    return {
        "releases": [v for v, _ in releases],
        "imports": [[*k, optional._ranges(sorted(v))] for k, v in sorted(seen.items())],
    }


def write(data: dict[str, object], out: Path) -> int:
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    out.write_bytes(gzip.compress(raw, mtime=0))
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", type=Path, required=True, help="folder of mirrors named owner+name/repo")
    ap.add_argument("--package", action="append", help="only these packages (default: all of PACKAGES)")
    ap.add_argument("--since", default=optional.SINCE)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    keep, known = history_keep(), history_known()
    packages: dict[str, object] = {}
    for dist in args.package or list(PACKAGES):
        folder, repo, root, own, tags = PACKAGES[dist]
        base = args.mirrors / folder
        git_dir = base / "repo" if (base / "repo").is_dir() else base
        if not git_dir.is_dir():
            print(f"{dist}: no mirror at {base}, left out")
            continue
        data = derive(
            git_dir, root, own, tags, since=max(args.since, SINCE_OF.get(dist, "")), keep=keep, known=known
        )
        packages[dist] = {"source": repo, **data}
        print(f"{dist}: {len(data['releases'])} releases, {len(data['imports'])} imports kept")  # type: ignore[arg-type]
    size = write({"schema": SCHEMA, "packages": packages}, args.out)
    print(f"wrote {args.out} ({size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
