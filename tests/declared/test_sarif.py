"""SARIF 2.1.0 output: the structure code-scanning dashboards read, each finding at its line."""

from __future__ import annotations

import json

from envdoctor.report import FORMATS
from tests.conftest import run_cli
from tests.declared.stack_repos import OPEN_R1_PINS, committed_repo, requirements
from tests.integrations.helpers import ROOT

LEVELS = {"none", "note", "warning", "error"}


def assert_sarif(log: dict) -> None:
    """The required properties and value rules of the SARIF 2.1.0 schema that envdoctor uses
    (sarif-schema-2.1.0.json: sarifLog, run, tool, toolComponent, reportingDescriptor, result,
    message, location, physicalLocation, artifactLocation, region)."""
    assert log["version"] == "2.1.0"
    assert log["$schema"].startswith("https://") and log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        rules = driver.get("rules", [])
        assert len({r["id"] for r in rules}) == len(rules)
        for rule in rules:
            assert rule["id"] and rule["shortDescription"]["text"]
            assert rule["defaultConfiguration"]["level"] in LEVELS
        for result in run["results"]:
            assert isinstance(result["message"]["text"], str) and result["message"]["text"]
            assert result["level"] in LEVELS
            assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            assert result["locations"], result  # GitHub refuses a result without one
            for loc in result["locations"]:
                phys = loc["physicalLocation"]
                assert phys["artifactLocation"]["uri"] and "\\" not in phys["artifactLocation"]["uri"]
                if "region" in phys:
                    assert isinstance(phys["region"]["startLine"], int)
                    assert phys["region"]["startLine"] >= 1


def located(log: dict) -> dict[str, str]:
    out = {}
    for r in log["runs"][0]["results"]:
        phys = r["locations"][0]["physicalLocation"]
        out[r["ruleId"]] = f"{phys['artifactLocation']['uri']}:{phys['region']['startLine']}"
    return out


def test_sarif_locates_config_keys_and_declarations(tmp_path):
    repo = committed_repo(
        tmp_path,
        {
            "requirements.txt": requirements({**OPEN_R1_PINS, "torch": "2.5.1"}),
            "old.yaml": "learning_rate: 1.0e-6\nuse_vllm: true\nvllm_device: auto\nnum_generations: 1\n"
            "per_device_train_batch_size: 4\n",
        },
    )
    out = run_cli("hook", "old.yaml", "--format", "sarif", "-o", "envdoctor.sarif", cwd=repo)
    assert out.returncode == 1
    assert "PKG004" in out.stdout  # the text report still reaches the CI log
    log = json.loads((repo / "envdoctor.sarif").read_text())
    assert_sarif(log)
    where = located(log)
    assert where["PKG004"] == "requirements.txt:3"  # the torch pin to change
    assert where["CFG003"] == "old.yaml:4"  # num_generations: 1
    assert where["CFG001"] == "old.yaml:3"  # vllm_device, removed in TRL 0.18.0
    levels = {r["ruleId"]: r["level"] for r in log["runs"][0]["results"]}
    assert levels["PKG004"] == "error"


def test_sarif_clean_run_and_registration(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": requirements(OPEN_R1_PINS)})
    out = run_cli("hook", "recipes/grpo/config_demo.yaml", "--format", "sarif", cwd=repo)
    assert out.returncode == 0, out.stdout
    log = json.loads(out.stdout)
    assert_sarif(log)
    # a result per finding (docs/ci.md): a clean run's infos are there, as notes, never alerts
    assert {r["level"] for r in log["runs"][0]["results"]} <= {"note"}
    assert "sarif" in FORMATS


def test_check_writes_sarif_too():
    """`envdoctor check --format sarif`: the same renderer, findings without a file unlocated."""
    seed = ROOT / "examples/seed-000"
    out = run_cli(
        "check",
        "--facts",
        "facts.json",
        "--config",
        "grpo.yaml",
        "--format",
        "sarif",
        "--",
        "python",
        "train.py",
        cwd=seed,
    )
    assert out.returncode == 1
    log = json.loads(out.stdout)
    assert_sarif(log)
    (lay,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "LAY003"]
    assert lay["level"] == "error" and "fix:" in lay["message"]["text"]


def test_every_finding_is_a_result_infos_as_notes():
    """docs/ci.md: "a result per finding"; infos are notes (not alerts), with or without -v."""
    from envdoctor.findings import Finding, Severity
    from envdoctor.report.interface import Area, Report
    from envdoctor.report.sarif import render_many

    info = Finding(rule="CFG004", severity=Severity.INFO, message="recipe keys", fix="")
    error = Finding(rule="PKG004", severity=Severity.ERROR, message="torch pin", fix="pin it")
    report = Report(areas=[Area(key="packages", title="Packages", findings=[info, error])])
    quiet = json.loads(render_many([report]))["runs"][0]["results"]
    assert sorted((r["ruleId"], r["level"]) for r in quiet) == [("CFG004", "note"), ("PKG004", "error")]
    loud = json.loads(render_many([report], verbose=True))["runs"][0]["results"]
    assert sorted(r["level"] for r in loud) == ["error", "note"]


def test_hook_sarif_masks_the_reports_known_secrets():
    """Several reports in one SARIF log get the redaction pass of every other format."""
    from envdoctor.commands.hook import _render_all
    from envdoctor.findings import Finding, Severity
    from envdoctor.report.interface import Area, Report

    secret = "s3cr3t-value-of-hub-token"
    error = Finding(
        rule="CFG003", severity=Severity.ERROR, message=f"key set to {secret}", fix=f"remove {secret}"
    )
    report = Report(areas=[Area(key="config", title="Config", findings=[error])], secrets={secret})
    for fmt in ("sarif", "json", "junit"):
        out = _render_all([("grpo.yaml", report)], fmt, verbose=True, color=False)
        assert secret not in out and "key set to ****" in out, fmt


def _locations(log: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in log["runs"][0]["results"]:
        assert r["locations"], r  # GitHub's upload refuses the whole file for one without
        out.setdefault(r["ruleId"], []).append(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        )
    return out


def test_check_locates_every_result_at_the_config_file():
    """Issue #27 item 7: LAY003 has no file and line of its own; it is located at grpo.yaml."""
    seed = ROOT / "examples/seed-000"
    out = run_cli(
        "check",
        "--facts",
        "facts.json",
        "--config",
        "grpo.yaml",
        "--format",
        "sarif",
        "--",
        "python",
        "train.py",
        cwd=seed,
    )
    log = json.loads(out.stdout)
    assert_sarif(log)
    assert _locations(log)["LAY003"] == ["grpo.yaml"]


def test_without_a_config_the_snapshot_then_the_script_then_the_root(tmp_path):
    import shutil

    shutil.copy(ROOT / "examples/seed-000/facts.json", tmp_path / "facts.json")
    out = run_cli(
        "check", "--facts", "facts.json", "--format", "sarif", "--", "python", "train.py", cwd=tmp_path
    )
    log = json.loads(out.stdout)
    assert_sarif(log)
    assert _locations(log)["LAY003"] == ["facts.json"]

    from envdoctor.findings import Finding, Severity
    from envdoctor.report.interface import Area, Report
    from envdoctor.report.sarif import render_many

    bare = Finding(rule="GPU001", severity=Severity.WARNING, message="no GPU", fix="")
    for artifact, uri in (("train.py", "train.py"), ("", ".")):
        report = Report(areas=[Area(key="gpus", title="GPUs", findings=[bare])], artifact=artifact)
        assert _locations(json.loads(render_many([report])))["GPU001"] == [uri]


def test_hook_stack_only_findings_are_located_at_the_declaration_file(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": "numpy==2.0.0\n"})
    out = run_cli("hook", "requirements.txt", "--format", "sarif", "-v", cwd=repo)
    log = json.loads(out.stdout)
    assert_sarif(log)
    assert all(uris == ["requirements.txt"] * len(uris) for uris in _locations(log).values())
