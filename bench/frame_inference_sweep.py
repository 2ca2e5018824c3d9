"""The versions triage infers from traceback frames, and its findings, on every development log
(docs/validation/heldout-2026-11-2*/logs*/*.log, tests/triage/logs/*.log, the ``log:`` of
tests/triage/real/*.yaml and tests/triage/realworld-heldout/*.yaml), in-process.

    PYTHONPATH=TREE python bench/frame_inference_sweep.py TREE > OUT.json
    python bench/frame_inference_sweep.py --diff BEFORE.json AFTER.json

Each log: ``inferred`` (package -> [oldest release, newest release, open at the top]) and
``findings`` ([rule, severity], in order). ``--diff`` prints the logs that gain a range and every
verdict that changed, and counts the gains per package.
"""

from __future__ import annotations

import collections
import glob
import io
import json
import sys


def sweep(root: str) -> dict[str, dict]:
    import yaml

    from envdoctor.triage.diagnose import diagnose_scan, scan_versions
    from envdoctor.triage.scanner import scan

    out: dict[str, dict] = {}

    def run(key: str, data: bytes) -> None:
        res = scan(io.BytesIO(data))
        vs = scan_versions(res)
        fs = diagnose_scan(res, None, vs)
        out[key] = {
            "inferred": {p: [v.low, v.version, v.newest] for p, v in vs.items() if v.inferred},
            "findings": [[f.rule, f.severity.value] for f in fs],
        }

    logs = sorted(glob.glob(f"{root}/docs/validation/heldout-2026-11-2*/logs*/*.log"))
    for path in logs + sorted(glob.glob(f"{root}/tests/triage/logs/*.log")):
        with open(path, "rb") as fh:
            run(path[len(root) + 1 :], fh.read())
    cases = sorted(glob.glob(f"{root}/tests/triage/real/*.yaml"))
    for path in cases + sorted(glob.glob(f"{root}/tests/triage/realworld-heldout/*.yaml")):
        with open(path, encoding="utf-8") as fh:
            case = yaml.safe_load(fh)
        if isinstance(case, dict) and isinstance(case.get("log"), str):
            run(path[len(root) + 1 :], case["log"].encode())
    return out


def diff(before: dict[str, dict], after: dict[str, dict]) -> None:
    gains: collections.Counter[str] = collections.Counter()
    changed = 0
    for key in sorted(after):
        old = before.get(key, {"inferred": {}, "findings": []})
        new = {p: r for p, r in after[key]["inferred"].items() if p not in old["inferred"]}
        gains.update(list(new))
        if new:
            print(f"{key}: gains {new}")
        if after[key]["findings"] != old["findings"]:
            changed += 1
            print(f"{key}: {old['findings']} -> {after[key]['findings']}")
    print(f"{len(after)} logs; gains per package {dict(gains)}; verdicts changed {changed}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--diff"]:
        with open(sys.argv[2]) as b, open(sys.argv[3]) as a:
            diff(json.load(b), json.load(a))
    else:
        json.dump(sweep(sys.argv[1].rstrip("/")), sys.stdout, indent=0, sort_keys=True)
