"""JUnit XML for CI dashboards: one test case per rule that ran, failures for errors."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from envdoctor.findings import Finding, Severity
from envdoctor.report.interface import Report


def render(report: Report, verbose: bool = False, color: bool = False) -> str:
    cases = []
    failures = skipped = 0
    for area in report.areas:
        by_rule: dict[str, list[Finding]] = {}
        for f in area.findings:
            by_rule.setdefault(f.rule, []).append(f)
        for rule_id in sorted(set(area.ran) | set(by_rule) | set(area.skipped)):
            case = ET.Element("testcase", classname=f"envdoctor.{area.key}", name=rule_id)
            found = by_rule.get(rule_id, [])
            errs = [f for f in found if f.severity == Severity.ERROR]
            if errs:
                failures += 1
                node = ET.SubElement(case, "failure", message=errs[0].message[:500], type="error")
                node.text = "\n".join(f"{f.message}\nfix: {f.fix}" for f in errs)
            elif rule_id in area.skipped and not found:
                skipped += 1
                ET.SubElement(case, "skipped", message=area.skipped[rule_id])
            others = [f for f in found if f.severity != Severity.ERROR]
            if others:
                out = ET.SubElement(case, "system-out")
                out.text = "\n".join(f"[{f.severity.value}] {f.message}\nfix: {f.fix}" for f in others)
            cases.append(case)
    suite = ET.Element(
        "testsuite",
        name="envdoctor",
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
    )
    suite.extend(cases)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
