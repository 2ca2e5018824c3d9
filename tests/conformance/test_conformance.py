"""Conformance: real published GRPO setups through the real CLI (docs/conformance.md).

Each setup, as published and on the machine it was written for, must come out clean: exit 0 and
not one warning. Each mutation must fail with its rule, and the mutation with its fix applied must
be clean again. A case that fails for a known, open reason is listed in KNOWN (strict: a case
that starts passing fails the run).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conformance.setups import (
    Case,
    blob_sha,
    build_facts,
    cases,
    cli_args,
    join_continuations,
    read_yaml,
    setup_dirs,
)
from tests.conftest import run_cli

#: case id -> why it fails today, marked xfail(strict=True) so that CI stays green until its fix
#: lands and fails as soon as it does. Empty: every published setup is clean and every mutation
#: caught (the items of issue 13 and PKG003 / PKG006 / colocate MEM001 found by this suite are fixed).
KNOWN: dict[str, str] = {}

CASES = cases()


def _marks(case: Case) -> list:
    reason = KNOWN.get(case.id)
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


def _run(case: Case, tmp_path: Path) -> tuple[int, list[dict], str]:
    work = tmp_path / case.setup
    shutil.copytree(Path(__file__).parent / "setups" / case.setup, work)
    for rel, values in case.files.items():
        data = yaml.safe_load((work / rel).read_text(encoding="utf-8")) or {}
        data.update(values)
        (work / rel).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    facts = tmp_path / "case-facts.json"
    facts.write_text(json.dumps(case.facts), encoding="utf-8")
    proc = run_cli(*cli_args(case, facts), cwd=work)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"exit {proc.returncode}, no JSON report:\n{proc.stdout}\n{proc.stderr}")
    return proc.returncode, report["findings"], proc.stdout


def _loud(findings: list[dict]) -> list[str]:
    return [
        f"{f['rule']} {f['severity']}: {f['message']}"
        for f in findings
        if f["severity"] in ("error", "warning")
    ]


def _known(case: Case, findings: list[dict]) -> list[dict]:
    """KNF001 findings for the catalogue entries the setup's case.yaml lists under
    known_failures (its stack is known to hit them, with a public report): a warning, or advice
    where the entry hinges on what envdoctor cannot see (the catalogue's depends_on)."""
    return [
        f
        for f in findings
        if f["rule"] == "KNF001"
        and f["severity"] in ("warning", "info")
        and f["evidence"].get("id") in case.known_failures
    ]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES])
def test_case(case: Case, tmp_path):
    code, findings, _ = _run(case, tmp_path)
    known = _known(case, findings)
    if case.name == "published":
        assert {f["evidence"]["id"] for f in known} == set(case.known_failures), (
            f"{case.id} must show the known failures its case.yaml lists"
        )
    findings = [f for f in findings if f not in known]
    loud = _loud(findings)
    if case.expect == "clean":
        assert (code, loud) == (0, []), f"{case.id} must be clean"
        return
    if case.expect.get("no_error"):  # measured harmless: a warning may say so, an error may not
        errors = [line for line in loud if " error: " in line]
        assert (code, errors) == (0, []), f"{case.id} must have no error"
        return
    rule, severity = case.expect["rule"], case.expect.get("severity", "error")
    hits = [f for f in findings if f["rule"] == rule and f["severity"] == severity]
    assert hits, f"{case.id}: expected {rule} ({severity}); got {loud}"
    assert code == (1 if severity == "error" else 0)
    words = case.expect.get("message_has", [])
    assert any(all(w in f["message"] for w in words) for f in hits), (words, hits)
    if case.expect.get("only"):
        assert {f.split()[0] for f in loud} == {rule}, loud


@pytest.mark.parametrize("setup", setup_dirs(), ids=lambda p: p.name)
def test_setup_is_sourced(setup: Path):
    """Every setup names its source at a commit; published files are byte-identical to it."""
    src = read_yaml(setup / "source.yaml")
    if src.get("kind") == "measured":  # a live run: its record is in docs/conformance.md
        assert src["measured"].startswith("docs/conformance.md#") and src["measured_on"]
        assert src["machine"]["written_for"]
        return
    assert src["commit"] and len(src["commit"]) == 40, "a full commit id"
    assert all(re.match(r"https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/", u) for u in src["urls"]), (
        "every URL at a commit"
    )
    assert any(src["commit"] in u for u in src["urls"])
    for rel, sha in (src.get("files") or {}).items():
        assert blob_sha((setup / rel).read_bytes()) == sha, f"{rel} differs from the source"
    assert src["machine"]["written_for"]


@pytest.mark.parametrize("setup", setup_dirs(), ids=lambda p: p.name)
def test_launch_is_as_published(setup: Path):
    """The line envdoctor runs is the published one (continuations joined) unless explained."""
    case = read_yaml(setup / "case.yaml")
    published = join_continuations(case["published"]["trainer"])
    if case["check"].get("derived"):
        assert case["check"]["derived"].strip()
        return
    assert case["check"]["launch"] == published
    if case["published"].get("server"):
        assert case["check"]["server"] == join_continuations(case["published"]["server"])


@pytest.mark.parametrize("setup", setup_dirs(), ids=lambda p: p.name)
def test_snapshot_is_built_from_its_era(setup: Path):
    """facts.json is what build_facts writes (regenerate: python -m tests.conformance.build)."""
    facts = json.loads((setup / "facts.json").read_text(encoding="utf-8"))
    assert facts == build_facts(setup)


def test_suite_size():
    """At least 15 published setups, each with 2-4 mutations."""
    dirs = setup_dirs()
    assert len(dirs) >= 15
    for d in dirs:
        n = len(read_yaml(d / "case.yaml").get("mutations") or [])
        assert 2 <= n <= 4, (d.name, n)


def test_known_names_real_cases():
    """Every KNOWN entry names a case of the suite (a stale or mistyped entry would hide nothing)."""
    assert set(KNOWN) <= {c.id for c in CASES}
