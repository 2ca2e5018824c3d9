"""Triage every dev log of docs/validation/heldout-*/logs*/ in-process, as
``envdoctor triage --format json LOG`` does (this machine's facts, no config, no launch line).

    python bench/triage_dev_sweep.py OUT.json [core|healthy|all]

Writes each index row (``index.jsonl``: settled_cause, class, core, healthy, truncated) with its
``path`` and the findings (``out``: rule, severity, message, fix). Two worker processes.
docs/validation/triage-misses-2026-11-29.md reads it.
"""

from __future__ import annotations

import json
import sys
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VALIDATION = ROOT / "docs" / "validation"


def rows(which: str) -> list[dict]:
    out = []
    indexes = sorted(VALIDATION.glob("heldout-20*/logs*/index.jsonl")) + sorted(
        VALIDATION.glob("heldout-20*/logs*/logs/index.jsonl")
    )
    seen = set()
    for index in indexes:
        for line in index.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            path = index.parent / row["file"]
            if not path.exists():
                path = index.parent / "logs" / row["file"]
            if not path.exists():  # an index beside its logs that names them "logs/NNN.log"
                path = index.parent / Path(row["file"]).name
            wanted = which == "all" or bool(row.get(which))
            if path.exists() and wanted and str(path) not in seen:  # a log two indexes list: once
                seen.add(str(path))
                out.append({**row, "path": str(path)})
    return out


def _setup() -> None:
    global CTX
    from envdoctor.checks.context import Context
    from envdoctor.facts.collect import collect_facts
    from envdoctor.plan.build import build_plan

    facts = collect_facts()
    CTX = Context(facts=facts, plan=build_plan(config=None, launch=None, live=facts.live), network=False)


def one(row: dict) -> dict:
    from envdoctor.triage.decode import chunks
    from envdoctor.triage.diagnose import diagnose_scan, scan_versions
    from envdoctor.triage.scanner import scan

    with open(row["path"], "rb") as fh:
        result = scan(chunks(fh))
    found = diagnose_scan(result, CTX, scan_versions(result))
    row["out"] = [
        {"rule": f.rule, "severity": f.severity.value, "message": f.message, "fix": f.fix} for f in found
    ]
    return row


def main() -> None:
    out, which = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "all"
    with Pool(2, initializer=_setup) as pool:
        done = pool.map(one, rows(which), chunksize=4)
    Path(out).write_text(json.dumps(done, indent=0))
    errors = sum(any(f["severity"] == "error" for f in r["out"]) for r in done)
    flagged = sum(any(f["severity"] != "info" for f in r["out"]) for r in done)
    print(f"{len(done)} logs; {errors} with an error finding; {flagged} with a warning or error")


if __name__ == "__main__":
    main()
