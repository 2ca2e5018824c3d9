#!/usr/bin/env python3
"""Cut each repository of the gate's suite (tests/gate/repos/<half>/<name>/) to the files, and the
lines of them, that its labelled findings need: what the hook prints, per run (default and
configured), must stay the same — exit status and every finding kind (rule, key) at its
severity. Maintainer script; not run in CI.

Files go first (halves of the remaining files tried together, then single ones: a file whose
removal changes what the hook prints is kept); then the lines of each kept file: comment and
blank lines of YAML and shell files, lines of Python, README and setup.py files that the readers
do not need (each tried in halves, kept when the output changes). ``labels.yaml`` and
``SOURCE.txt`` are never touched. Prints how much was cut.

Usage: python scripts/gate_suite_minimize.py [half/name ...]
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.gate.suite import HERE, config_files, labels  # noqa: E402

KEEP = {"labels.yaml", "SOURCE.txt"}
RANK = {"error": 2, "warning": 1}


def _clear_caches() -> None:
    """The hook caches what it read of a repository by path: forget it between runs."""
    import functools

    for name, mod in list(sys.modules.items()):
        if not name.startswith(("envdoctor.plan", "envdoctor.commands", "envdoctor.facts.declared")):
            continue
        for value in vars(mod).values():
            if isinstance(value, functools._lru_cache_wrapper):  # type: ignore[attr-defined]
                value.cache_clear()
    from envdoctor.commands import hook as hook_mod

    hook_mod._SECRETS.clear()


def _hook(work: Path, args: list[str]) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from envdoctor.commands.hook import hook
    from envdoctor.errors import InputError

    _clear_caches()
    here = os.getcwd()
    os.chdir(work)
    try:
        result = CliRunner().invoke(hook, args, catch_exceptions=True)
    finally:
        os.chdir(here)
    if isinstance(result.exception, InputError):
        return 2, "", str(result.exception)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return 99, "", repr(result.exception)
    return result.exit_code, result.stdout, ""


#: the files of each checked target with the kinds it printed (the last signature's)
TARGETS: dict[str, set[tuple[str, str]]] = {}


def signature(work: Path, extra: list[str]) -> tuple[int, tuple[tuple[str, str, int], ...]]:
    """As tests/gate/suite.py's run_hook judges it (exit status and finding kinds at severity),
    and what the hook decided on the way (``_decided``, ``_skips``): a cut that leaves the
    findings but takes away what a labelled-false finding would come from (the setup.py that
    declares TRL, the SFT recipe skipped) changes that."""
    import json

    TARGETS.clear()

    files = config_files(work)
    kinds: dict[tuple[str, str], int] = {}
    stopped = False
    for _ in range(5):
        rc, out, err = _hook(work, ["--format", "json", *extra, *files])
        if rc != 2:
            break
        named = next((f for f in files if f in err), None)
        kinds[("EXIT2", "")] = 2
        TARGETS.setdefault(named or "", set()).add(("EXIT2", ""))
        stopped = True
        if named is None:
            return 2, tuple(sorted((r, k, s) for (r, k), s in kinds.items()))
        files = [f for f in files if f != named]
    if rc not in (0, 1):
        return rc, ()
    decisions: set[object] = set(_skips(work, files))
    for item in json.loads(out)["files"] if out.strip() else []:
        TARGETS.setdefault(item["file"], set())
        decisions.add(_decided(item))
        for f in item["report"].get("findings", []):
            if f["severity"] in RANK:
                ev = f.get("evidence") or {}
                key = (f["rule"], str(ev.get("key") or ev.get("id") or ""))
                kinds[key] = max(kinds.get(key, 0), RANK[f["severity"]])
                TARGETS[item["file"]].add(key)
    found = tuple(sorted((r, k, s) for (r, k), s in kinds.items()))
    return (2 if stopped else rc), found, tuple(sorted(map(repr, decisions)))  # type: ignore[return-value]


#: the packages the rules judge (a cut may drop the others' pins)
STACK = {"trl", "vllm", "torch", "transformers", "accelerate", "deepspeed", "peft", "python", "flash-attn"}
#: the areas whose decisions (a rule skipped, and why) a cut must keep
DECIDING = ("packages", "config")


def _decided(item: dict) -> object:
    """What the hook decided for one checked target, beside its findings: its shape (a GRPO
    config, an accelerate config), the declared stack it judged, the rules it skipped and why."""
    report = item["report"]
    stack = (report.get("extra") or {}).get("declared_stack") or {}
    skipped = sorted(
        (rule, why[:60])
        for area in report.get("areas", [])
        if area.get("key") in DECIDING
        for rule, why in (area.get("skipped") or {}).items()
    )
    return (
        bool(item.get("grpo_config")),
        bool(item.get("accelerate_config")),
        tuple(
            sorted(
                (n, e.get("version"), e.get("how"), e.get("specifier"))
                for n, e in stack.items()
                if n in STACK
            )
        ),
        tuple(skipped),
    )


def _skips(work: Path, files: list[str]) -> set[str]:
    """Why the hook did not judge a file as a GRPO or accelerate config (each reason once)."""
    from envdoctor.commands.hook import classify
    from envdoctor.errors import InputError

    here = os.getcwd()
    os.chdir(work)
    try:
        _clear_caches()
        return {"skip: " + why for why in classify(files)[1].values()}
    except InputError:
        return {"skip: exit 2"}
    finally:
        os.chdir(here)


def both(work: Path, extra: list[str]) -> tuple:
    return (signature(work, []), signature(work, extra))


def _files(work: Path) -> list[Path]:
    return sorted(
        (p for p in work.rglob("*") if p.is_file() and p.name not in KEEP),
        key=lambda p: -p.stat().st_size,
    )


def _try_remove(work: Path, group: list[Path], same: Callable[[], bool]) -> bool:
    saved = {p: p.read_bytes() for p in group}
    for p in group:
        p.unlink()
    if same():
        return True
    for p, data in saved.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return False


def cut_files(work: Path, same: Callable[[], bool]) -> None:
    def go(group: list[Path]) -> None:
        if not group or _try_remove(work, group, same):
            return
        if len(group) == 1:
            return
        half = len(group) // 2
        go(group[:half])
        go(group[half:])

    go(_files(work))
    for d in sorted((d for d in work.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)):
        if not any(d.iterdir()):
            d.rmdir()


def _units(path: Path, text: str) -> list[list[list[int]]]:
    """What to try to cut, in phases, each a list of units (a unit: the line indices cut
    together). Python: its statements (outermost first, a statement with its body), then the
    arguments of calls and items of literals, then single lines; other files: single lines.
    JSON and files under 200 bytes: nothing (a line cut breaks JSON)."""
    import ast

    n = len(text.split("\n"))
    lines = [[i] for i in range(n)]
    if path.suffix == ".json" or len(text) < 200:
        return []
    if path.suffix != ".py":
        return [lines]
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [lines]
    outer: list[list[int]] = []
    inner: list[list[int]] = []
    parts: list[list[int]] = []  # a call's keyword argument, an item of a list / dict literal
    for node in ast.walk(tree):
        items: list[ast.AST] = []
        if isinstance(node, ast.Call):
            items = list(node.keywords)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = [v for v in node.values if v is not None]
        for item in items:
            start, end = getattr(item, "lineno", None), getattr(item, "end_lineno", None)
            if start is not None:
                parts.append(list(range(start - 1, end or start)))
        for body in ("body", "orelse", "finalbody", "handlers"):
            for stmt in getattr(node, body, []) or []:
                if isinstance(stmt, (ast.stmt, ast.excepthandler)):
                    span = list(range(stmt.lineno - 1, (stmt.end_lineno or stmt.lineno)))
                    (outer if node is tree else inner).append(span)
    return [outer, inner, parts, lines]


#: runs of the hook spent on one phase of one file at most (halves tried first)
LINE_RUNS = 60


def cut_lines(work: Path, same: Callable[[], bool]) -> None:
    for path in _files(work):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        lines = text.split("\n")
        alive = set(range(len(lines)))

        def write(keep: set[int], path: Path = path, lines: list[str] = lines) -> None:
            path.write_text(
                "\n".join(ln for i, ln in enumerate(lines) if i in keep),
                encoding="utf-8",
                errors="surrogateescape",
            )

        for units in _units(path, text):
            spent = [0]

            def go(
                group: list[list[int]],
                alive: set[int] = alive,
                write: Callable[[set[int]], None] = write,
                spent: list[int] = spent,
            ) -> None:
                cut = {i for unit in group for i in unit} & alive
                if not cut or spent[0] >= LINE_RUNS:
                    return
                spent[0] += 1
                write(alive - cut)
                if same():
                    alive -= cut
                    return
                write(alive)
                if len(group) == 1:
                    return
                half = len(group) // 2
                go(group[:half])
                go(group[half:])

            go(units)
        write(alive)


def size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def minimize(repo: Path) -> None:
    import tempfile

    extra = list(labels(repo).get("configured") or [])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / repo.name
        shutil.copytree(repo, work)
        base = both(work, extra)
        runs = [0]

        def same() -> bool:
            runs[0] += 1
            return both(work, extra) == base

        before = size(repo)
        targets = {**TARGETS}
        both(work, [])
        targets_default = {**TARGETS}
        both(work, extra)
        needed: set[str] = set()
        for tmap in (targets_default, {**TARGETS}):
            for kind in {k for ks in tmap.values() for k in ks}:
                first = next(t for t, ks in sorted(tmap.items()) if kind in ks)
                needed |= set(first.split(" + "))
        del targets
        configs = [work / f for f in config_files(work) if f not in needed]
        if configs and not _try_remove(work, configs, same):
            print(f"  {repo.name}: the configs of no finding are not all removable", flush=True)
        cut_files(work, same)
        cut_lines(work, same)
        assert both(work, extra) == base, repo.name
        shutil.rmtree(repo)
        shutil.copytree(work, repo)
    after = size(repo)
    print(
        f"{repo.parent.name}/{repo.name}: {before[0]} files {before[1]:,} B -> {after[0]} files "
        f"{after[1]:,} B ({runs[0]} runs); kept: {sorted(str(p.relative_to(repo)) for p in _files(repo))}",
        flush=True,
    )


if __name__ == "__main__":
    names = sys.argv[1:] or [f"{h}/{p.name}" for h in ("dev", "held") for p in sorted((HERE / h).iterdir())]
    for item in names:
        minimize(HERE / item)
