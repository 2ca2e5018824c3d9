"""Helpers of the triage tests: scan a text or an excerpt, build the context a run is judged in."""

from __future__ import annotations

import io
import sys
import textwrap
import zipfile
from pathlib import Path
from types import ModuleType

from envdoctor.checks.context import Context
from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Finding
from envdoctor.plan.build import build_plan
from envdoctor.triage.diagnose import diagnose_scan
from envdoctor.triage.interface import ScanResult
from envdoctor.triage.scanner import scan

LOGS = Path(__file__).resolve().parent / "logs"
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module, loaded once as the scripts load each other
    (scripts/sibling.py)."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        from sibling import load  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(SCRIPTS))
    return load(name)  # type: ignore[no-any-return]


def wheel(folder: Path, dist: str, version: str, files: dict[str, str]) -> None:
    """A release wheel of ``dist`` in ``folder``: ``files`` (paths under its import folder
    ``dist``) dedented, and its METADATA."""
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"{dist}-{version}-py3-none-any.whl", "w") as zf:
        for path, src in files.items():
            zf.writestr(f"{dist}/{path}", textwrap.dedent(src))
        zf.writestr(f"{dist}-{version}.dist-info/METADATA", f"Name: {dist}\nVersion: {version}\n")


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
