"""How often `envdoctor fix` leaves a clean check, over every broken setup of the test suite.

    python bench/fix_closure.py [--show]

The broken setups: each mutation of the conformance suite (tests/conformance/setups/*/case.yaml,
its expectation an error or a warning) and the broken field reports of tests/test_seeds.py
(examples/seed-000). Each runs through `envdoctor fix --format json` in-process on a temporary
copy; then `envdoctor check` runs on the changed inputs (the config file as fix wrote it, the
printed launch lines, environment and versions as `--assume`d) as a user would. Prints a table:
per setup the errors and warnings before → after, what was fixed and left, the time `fix` took,
and whether any fix added a problem; then the totals.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envdoctor.cli import cli  # noqa: E402
from tests.conformance.setups import SETUPS, cases, cli_args  # noqa: E402


def _loud(report: dict) -> set[tuple[str, str, str]]:
    return {(f["rule"], f["severity"], f["message"]) for f in report["findings"] if f["severity"] != "info"}


def _invoke(args: list[str], cwd: Path) -> tuple[int, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(cli, args)
    finally:
        os.chdir(old)
    return res.exit_code, res.output


def _broken() -> list[tuple[str, Path, list[str]]]:
    """(name, working folder, `check` arguments after the command) of each broken setup."""
    out = []
    for case in cases():
        if case.name == "published" or case.name.endswith("+fix"):
            continue
        if not isinstance(case.expect, dict) or case.expect.get("no_error"):
            continue
        tmp = Path(tempfile.mkdtemp(prefix="fixbench-"))
        work = tmp / case.setup
        shutil.copytree(SETUPS / case.setup, work)
        for rel, values in case.files.items():
            data = yaml.safe_load((work / rel).read_text(encoding="utf-8")) or {}
            data.update(values)
            (work / rel).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        facts = tmp / "facts.json"
        facts.write_text(json.dumps(case.facts), encoding="utf-8")
        out.append((case.id, work, cli_args(case, facts)[1:]))
    seed = Path(tempfile.mkdtemp(prefix="fixbench-")) / "seed-000"
    shutil.copytree(ROOT / "examples" / "seed-000", seed)
    args = ["--facts", "facts.json", "--config", "grpo.yaml", "--format", "json", "--", "python", "train.py"]
    out.append(("seed-000", seed, args))
    return out


def _after_args(args: list[str], changes: dict) -> list[str]:
    """The check arguments a user runs after following the fix: the printed launch lines, the
    versions (--assume) and the environment (a snapshot's env is edited in its file)."""
    head, _, tail = _split(args)
    new = list(head)
    for name, version in changes["packages"].items():
        new += ["--assume", f"{name}=={version}"]
    if changes["launch"]:
        drop = {i for i, a in enumerate(new) if a == "--launch"} | {
            i + 1 for i, a in enumerate(new) if a == "--launch"
        }
        new = [a for i, a in enumerate(new) if i not in drop]
        *servers, trainer = changes["launch"]
        for line in servers:
            new += ["--launch", line]
        return [*new, "--", *shlex.split(trainer)]
    return [*new, "--", *tail]


def _split(args: list[str]) -> tuple[list[str], str, list[str]]:
    if "--" in args:
        i = args.index("--")
        return args[:i], "--", args[i + 1 :]
    return args, "", []


def _env_edit(args: list[str], work: Path, changes: dict) -> None:
    if not (changes["env"]["set"] or changes["env"]["unset"]) or "--facts" not in args:
        return
    path = work / args[args.index("--facts") + 1]
    snap = json.loads(path.read_text(encoding="utf-8"))
    for k in changes["env"]["unset"]:
        snap.get("env", {}).pop(k, None)
    snap.setdefault("env", {}).update(changes["env"]["set"])
    path.write_text(json.dumps(snap), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--show", action="store_true", help="print what was left for each setup")
    opts = ap.parse_args()
    rows, clean, no_error, added, reworded, total_time = [], 0, 0, 0, 0, 0.0
    for name, work, args in _broken():
        start = time.perf_counter()
        code, out = _invoke(["fix", *args], work)
        took = time.perf_counter() - start
        total_time += took
        result = json.loads(out)
        changes = result["changes"]
        _env_edit(args, work, changes)
        code2, out2 = _invoke(["check", *_after_args(args, changes)], work)
        after = json.loads(out2)
        before_loud, after_loud = _loud(result["before"]), _loud(after)
        new = after_loud - before_loud
        # a rule with more findings than before, or a fixed rule with a new message: a new
        # problem (the closure's test); another rule's finding in other words is counted apart
        fixed_rules = set(result["fixed"])
        worse = {
            f
            for f in new
            if f[0] in fixed_rules
            or sum(1 for g in after_loud if g[0] == f[0]) > sum(1 for g in before_loud if g[0] == f[0])
        }
        reworded += bool(new - worse)
        errors = sum(1 for f in after_loud if f[1] == "error")
        warnings = sum(1 for f in after_loud if f[1] == "warning")
        clean += not after_loud
        no_error += not errors
        added += bool(worse)
        e0 = sum(1 for f in before_loud if f[1] == "error")
        w0 = len(before_loud) - e0
        rows.append(
            (name, f"{e0}e {w0}w → {errors}e {warnings}w", ",".join(result["fixed"]), f"{took:.2f}s", new)
        )
        if opts.show and after_loud:
            for f in sorted(after_loud):
                print(f"    {name}: left {f[0]} {f[1]}: {f[2][:150]}")
            for u in result["unfixed"]:
                print(f"    {name}: unfixed {u['rule']}: {u['why'][:200]}")
    width = max(len(r[0]) for r in rows)
    print(f"{'SETUP':<{width}}  {'BEFORE → AFTER':<16}  {'TIME':>6}  FIXED")
    for name, counts, fixed, took, new in rows:
        flag = f"  REWORDED/ADDED {sorted(new)}" if new else ""
        print(f"{name:<{width}}  {counts:<16}  {took:>6}  {fixed}{flag}")
    n = len(rows)
    print(
        f"\n{n} broken setups: {no_error} ({100 * no_error / n:.0f} %) without an error after fix, "
        f"{clean} ({100 * clean / n:.0f} %) clean (no warning either); {added} where a fix added a "
        f"problem; {reworded} where a finding left standing is worded anew (e.g. for the new "
        f"version); fix took {total_time / n:.2f} s per setup on average (in-process)"
    )


if __name__ == "__main__":
    main()
