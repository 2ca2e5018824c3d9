"""Score bench/heldout_eval.py setups results against the sets' labels, with the fix figures.

    python docs/validation/gate13-2026-11-29/score.py BASE AFTER [-v] [--only-gate12]

BASE / AFTER: a folder of results, or a prefix (docs/validation/gate13-2026-11-29/base_).

healthy clean: check exits 0/1 with no warning or error; broken with an error: check has an error
finding; fix leaves no error: on a broken setup, `check` on what `fix` wrote (recheck; the check
itself where fix changed nothing) has no error; fix adds a finding: recheck has a warning or error
that `check` before did not have (by rule and severity). --only-gate12: the 221 setups of the sets
gate12 measured (not heldout-2026-11-29d).
"""

import glob
import json
import os
import sys
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]  # docs/validation


def label_of(setname: str, case: str) -> dict:
    parts = setname.split("_")
    base = TREE / parts[0]
    if len(parts) > 1:
        base = base / parts[1]
    if (base / "setups").is_dir():  # a set's setups/ folder; the flat ones (setups2/, setupsA/) hold them
        base = base / "setups"
    return json.loads((base / case / "label.json").read_text())


def load(folder: str, only12: bool) -> dict:
    res = {}
    pattern = os.path.join(folder, "*.json") if os.path.isdir(folder) else folder + "*.json"
    for f in sorted(glob.glob(pattern)):
        name = os.path.basename(f)[:-5].removeprefix("base_").removeprefix("after_")
        if only12 and name.startswith("heldout-2026-11-29d"):
            continue
        for case, r in json.load(open(f)).items():
            res[(name, case)] = r
    return res


def bad(findings) -> list[str]:
    return sorted(f"{f['rule']}:{f['severity']}" for f in findings if f["severity"] in ("warning", "error"))


def score(res: dict) -> tuple[dict, dict]:
    n = dict(hc=0, ht=0, be=0, bt=0, fixed=0, adds=0, exit2=0)
    rows = {}
    for (name, case), r in res.items():
        c = r["check"]
        before = bad(c.get("findings", []))
        after = r["recheck"]["findings"] if r.get("recheck") else before
        added = sorted(set(after) - set(before))
        n["adds"] += bool(added)
        n["exit2"] += c["rc"] == 2
        if label_of(name, case).get("healthy"):
            n["ht"] += 1
            clean = c["rc"] in (0, 1) and not before
            n["hc"] += clean
            rows[(name, case)] = ("H", clean, before, after)
        else:
            n["bt"] += 1
            err = any(f["severity"] == "error" for f in c.get("findings", []))
            n["be"] += err
            left = any(x.endswith(":error") for x in after) or c["rc"] == 2
            n["fixed"] += not left
            rows[(name, case)] = ("B", err, not left, before, after)
    return n, rows


def line(n: dict) -> str:
    return (
        f"healthy clean {n['hc']}/{n['ht']}; broken with an error {n['be']}/{n['bt']}; "
        f"broken where fix leaves no error {n['fixed']}/{n['bt']}; fix adds a finding {n['adds']}; exit 2 {n['exit2']}"
    )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    only12 = "--only-gate12" in sys.argv
    got = [score(load(a, only12)) for a in args]
    for a, (n, _) in zip(args, got):
        print(f"{a}: {line(n)}")
    if len(got) == 2:
        a, b = got[0][1], got[1][1]
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                print("changed", k, a.get(k), "->", b.get(k))
    if "-v" in sys.argv:
        for k, v in sorted(got[-1][1].items()):
            if v[0] == "H" and not v[1]:
                print("healthy, not clean", k, v[2])
            if v[0] == "B" and not v[1]:
                print("broken, no error", k, v[3])
            if v[0] == "B" and not v[2]:
                print("broken, fix leaves an error", k, v[4])
