"""Print what triage says on each held-out real log (README.md): rule, severity, message, fix."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.triage.helpers import findings, scan_bytes  # noqa: E402


def main() -> None:
    for path in sorted(Path(__file__).parent.glob("*.yaml")):
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
        found = findings(scan_bytes(case["log"]))
        print(f"== {path.stem} ({case['thread']}): {case['cause'][:160]}")
        if not found:
            print("   (no finding)")
        for f in found[:2]:
            print(f"   {f.rule} {f.severity.name}: {f.message[:300]}")
            print(f"      fix: {f.fix[:200]}")


if __name__ == "__main__":
    main()
