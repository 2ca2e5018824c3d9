"""Helpers of the triage tests: scan a text or an excerpt, build the context a run is judged in."""

from __future__ import annotations

import io
from pathlib import Path

from envdoctor.checks.context import Context
from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Finding
from envdoctor.plan.build import build_plan
from envdoctor.triage.diagnose import diagnose_scan
from envdoctor.triage.interface import ScanResult
from envdoctor.triage.scanner import scan

LOGS = Path(__file__).resolve().parent / "logs"


def scan_bytes(data: bytes | str) -> ScanResult:
    return scan(io.BytesIO(data.encode() if isinstance(data, str) else data))


def scan_log(name: str) -> ScanResult:
    with open(LOGS / name, "rb") as fh:
        return scan(fh)


def judge(snap: dict, config: dict | None = None, launch: str | None = None) -> Context:
    """The context ``envdoctor triage --facts … --config … --launch …`` builds."""
    return Context(
        facts=from_dict(snap, "test-snapshot"),
        plan=build_plan(config_dict=config, launch=launch, live=False),
        network=False,
    )


def findings(source: str | ScanResult, ctx: Context | None = None) -> list[Finding]:
    """Diagnose an excerpt (file name under logs/) or a scan result."""
    return diagnose_scan(scan_log(source) if isinstance(source, str) else source, ctx)
