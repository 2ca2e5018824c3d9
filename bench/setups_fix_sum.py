"""Summarise `bench/heldout_eval.py setups` results against the setups' labels: what `fix` did.

    python bench/setups_fix_sum.py RESULTS.json SETUPS_FOLDER [RESULTS.json SETUPS_FOLDER ...] [-v]

Per result file (a row): broken setups where `check` finds an error (n / broken), of those the
ones with no error after `fix` (fixed), the broken ones with a warning or error left after it,
fixes that added a finding (a warning or error `after` that `before` did not have), healthy
setups that `fix` changed (it fixed something or changed the launch: should be none), and the
`recheck` (`check` run again on what `fix` wrote, its pip line, environment and launch lines
followed): setups where it says otherwise than `fix`'s own `after` (a printed fix that does not
hold). ``-v`` lists the setups behind each count.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def summary(results: Path, setups: Path, verbose: bool) -> dict[str, int]:
    data = json.loads(results.read_text())
    t = dict(broken=0, error=0, fixed=0, left=0, added=0, healthy=0, healthy_changed=0, recheck_differs=0)
    for name, r in sorted(data.items()):
        healthy = json.loads((setups / name / "label.json").read_text())["healthy"]
        loud = [f for f in r["check"].get("findings", []) if f["severity"] != "info"]
        fx = r["fix"]
        before, after = fx.get("before_findings") or [], fx.get("after_findings") or []
        added = [a for a in after if a not in before]
        said = []
        if healthy:
            t["healthy"] += 1
            if fx.get("fixed") or fx.get("launch"):
                t["healthy_changed"] += 1
                said.append(f"healthy, changed: fixed {fx.get('fixed')}")
        else:
            t["broken"] += 1
            if any(f["severity"] == "error" for f in loud):
                t["error"] += 1
                ok = fx.get("after") is not None and not any(a.endswith(":error") for a in after)
                t["fixed"] += ok
                t["left"] += bool(after)
                if not ok or after:
                    said.append(
                        f"broken, after fix: {after}; unfixed {[u['rule'] for u in fx.get('unfixed') or []]}"
                    )
        if added:
            t["added"] += 1
            said.append(f"added {added}")
        again = r.get("recheck")
        if again is not None and sorted(again["findings"]) != sorted(after):
            t["recheck_differs"] += 1
            said.append(f"recheck {again['findings']} where fix said {after}")
        if verbose and said:
            print(f"  {name[:70]}: " + "; ".join(said))
    return t


def main(argv: list[str]) -> None:
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    if not args or len(args) % 2:
        sys.exit(__doc__)
    for results, setups in zip(args[::2], args[1::2], strict=True):
        t = summary(Path(results), Path(setups), verbose)
        print(
            f"{results}: error {t['error']}/{t['broken']} broken; fixed {t['fixed']}/{t['error']}; "
            f"left a warning or error {t['left']}; fixes that added a finding {t['added']}; healthy "
            f"changed {t['healthy_changed']}/{t['healthy']}; recheck differs {t['recheck_differs']}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
