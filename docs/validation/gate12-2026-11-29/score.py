"""Score bench/heldout_eval.py setups results against the sets' labels.

    python docs/validation/gate12-2026-11-29/score.py 'DIR/base_*.json' ['DIR/after_*.json'] [-v]

healthy clean: check exits 0/1 with no warning or error; broken with an error: check has an error
finding. A results file is named after its set (heldout-2026-11-28b, heldout-2026-11-29c_setups11a),
with an optional base_ / after_ prefix. -v lists the healthy setups that are not clean.
"""

import glob
import json
import os
import re
import sys
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]  # docs/validation


def label_of(setname: str, case: str) -> dict:
    parts = setname.split("_")
    base = TREE / parts[0]
    if len(parts) > 1:
        base = base / parts[1]
    return json.loads((base / "setups" / case / "label.json").read_text())


def load(pattern: str) -> dict:
    res = {}
    for f in sorted(glob.glob(pattern)):
        name = re.sub(r"^(base|after)_", "", os.path.basename(f)[:-5])
        for case, r in json.load(open(f)).items():
            res[(name, case)] = r
    return res


def main(pattern: str):
    res = load(pattern)
    hc = ht = be = bt = 0
    rows = {}
    for (name, case), r in res.items():
        c = r["check"]
        sev = [f["severity"] for f in c.get("findings", [])]
        bad = [f"{f['rule']}:{f['severity']}" for f in c.get("findings", []) if f["severity"] in ("warning", "error")]
        if label_of(name, case).get("healthy"):
            ht += 1
            clean = c["rc"] in (0, 1) and not bad
            hc += clean
            rows[(name, case)] = ("H", clean, c["rc"], bad)
        else:
            bt += 1
            be += "error" in sev
            rows[(name, case)] = ("B", "error" in sev, c["rc"], bad)
    return hc, ht, be, bt, rows


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "-v"]
    results = [main(p) for p in args]
    for p, (hc, ht, be, bt, _) in zip(args, results):
        print(f"{p}: healthy clean {hc}/{ht}; broken with an error {be}/{bt}")
    if len(results) == 2:
        a, b = results[0][4], results[1][4]
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                print("changed", k, a.get(k), "->", b.get(k))
        print("broken that lost their error:", [k for k in a if a[k][0] == "B" and a[k][1] and not b[k][1]])
    if "-v" in sys.argv:
        for k, v in sorted(results[-1][4].items()):
            if v[0] == "H" and not v[1]:
                print("healthy, not clean", k, v[2], v[3])
