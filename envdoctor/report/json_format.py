"""The JSON report (schema ``envdoctor.report/1``, documented in docs/report.md)."""

from __future__ import annotations

import json
from typing import Any

from envdoctor.findings import Severity
from envdoctor.report.interface import REPORT_SCHEMA, Report


def to_dict(report: Report) -> dict[str, Any]:
    return {
        "schema": REPORT_SCHEMA,
        "envdoctor": report.version,
        "subject": report.subject,
        "summary": {
            "errors": report.count(Severity.ERROR),
            "warnings": report.count(Severity.WARNING),
            "infos": report.count(Severity.INFO),
            "exit_code": report.exit_code(),
            "suppressed": len(report.suppressed),
        },
        "areas": [
            {
                "key": a.key,
                "title": a.title,
                "status": a.status,
                "summary": a.summary,
                "note": a.note,
                "ran": a.ran,
                "skipped": a.skipped,
            }
            for a in report.areas
        ],
        "findings": [dict(f.to_dict(), area=a.key) for a in report.areas for f in a.findings],
        "suppressed": [s.to_dict() for s in report.suppressed],
        "layout": report.layout,
        "upgrade_plan": report.upgrade_plan,
        **({"extra": report.extra} if report.extra else {}),
        **{a.key: a.data for a in report.areas if a.data},  # e.g. probe.model, probe.weight_sync
    }


def render(report: Report, verbose: bool = False, color: bool = False) -> str:
    return json.dumps(to_dict(report), indent=2, default=str) + "\n"
