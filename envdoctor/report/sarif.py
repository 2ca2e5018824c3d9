"""SARIF 2.1.0 (code-scanning dashboards): one run, a rule per rule id that produced a finding,
a result per finding, located at ``evidence["file"]`` / ``evidence["line"]`` when it has them,
else at the report's artifact (``Report.artifact``), else at the repository root."""

from __future__ import annotations

import json
from typing import Any

from envdoctor.findings import Finding, Severity
from envdoctor.report.interface import Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _rule(rule_id: str) -> dict[str, Any]:
    from envdoctor.rule_docs import rule_docs

    doc = rule_docs().get(rule_id)
    if doc is None:  # probe / triage ids without a rule file entry
        return {"id": rule_id}
    out: dict[str, Any] = {
        "id": rule_id,
        "name": doc.name,
        "shortDescription": {"text": doc.title},
        "fullDescription": {"text": doc.why},
        "help": {"text": f"{doc.why}\n\nFix: {doc.fix}"},
        "defaultConfiguration": {"level": LEVEL[doc.severity]},
    }
    url = next((r for r in doc.references if r.startswith("https://")), None)
    if url:
        out["helpUri"] = url
    return out


#: The last resort of a result's location: the repository root (GitHub's upload refuses a
#: result without one; a report with nothing checked from a file has no better place).
ROOT_ARTIFACT = "."


def file_uri(path: str) -> str:
    """A file's path as a URI reference (RFC 3986): its real name (the report shows control
    characters escaped) with every character but unreserved ones and ``/`` percent-encoded as
    UTF-8, so a space, ``%``, ``#``, ``?`` or a control character cannot change what it names."""
    from urllib.parse import quote

    from envdoctor.redact import unescape_controls

    return quote(unescape_controls(path).replace("\\", "/"), safe="/", errors="backslashreplace")


def _location(f: Finding, artifact: str = "") -> list[dict[str, Any]]:
    """Every result is located: the finding's file and line, else the report's artifact (the
    checked config, snapshot, script or log), else the repository root."""
    path = f.evidence.get("file")
    line = f.evidence.get("line")
    if not isinstance(path, str) or not path:
        path, line = artifact or ROOT_ARTIFACT, None
    physical: dict[str, Any] = {"artifactLocation": {"uri": file_uri(path), "uriBaseId": "%SRCROOT%"}}
    if isinstance(line, int) and line >= 1:
        physical["region"] = {"startLine": line}
    return [{"physicalLocation": physical}]


def _result(f: Finding, index: int, subject: str, artifact: str = "") -> dict[str, Any]:
    text = f.message + (f" → fix: {f.fix}" if f.fix else "")
    out: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index,
        "level": LEVEL[f.severity],
        "message": {"text": text},
        "locations": _location(f, artifact),
    }
    out["properties"] = {"subject": subject}
    return out


def render_many(reports: list[Report], verbose: bool = False) -> str:
    """One SARIF log for several reports (the hook checks several files): a result per finding,
    infos too (level ``note``), and one per suppressed finding with its ``suppressions``
    (``kind: external``, the reason as ``justification``), which dashboards show as dismissed."""
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results = []
    for report in reports:
        silenced = [(s.finding, s.suppression) for s in report.suppressed]
        for f, why in [(f, None) for f in report.findings] + silenced:
            if f.rule not in index:
                index[f.rule] = len(rules)
                rules.append(_rule(f.rule))
            result = _result(f, index[f.rule], report.subject, report.artifact)
            if why is not None:
                result["suppressions"] = [
                    {"kind": "external", "status": "accepted", "justification": f"{why.label()}: {why.why}"}
                ]
            results.append(result)
    version = next((r.version for r in reports if r.version), "")
    driver: dict[str, Any] = {"name": "envdoctor", "rules": rules}
    if version:
        driver["version"] = version
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results, "columnKind": "unicodeCodePoints"}],
    }
    return json.dumps(log, indent=2, default=str) + "\n"


def render(report: Report, verbose: bool = False, color: bool = False) -> str:
    return render_many([report], verbose=verbose)
