"""Triage every dev log (docs/validation/heldout-2026-11-2*/*/index.jsonl rows) with one tree:
python measure.py TREE OUT.json [JOBS]"""
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

tree, out = Path(sys.argv[1]), Path(sys.argv[2])
jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
data = Path("/work/wt/wheels12/docs/validation")
rows = []
for idx in sorted(data.glob("heldout-2026-11-2*/*/index.jsonl")):
    for line in idx.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            log = idx.parent / r["file"]
            if log.is_file():
                rows.append((str(log.relative_to(data)), r))
env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA", "PYTORCH"))}
env.update(PYTHONPATH=str(tree), NO_COLOR="1")

def run(item):
    rel, r = item
    p = subprocess.run([sys.executable, "-m", "envdoctor", "triage", "--format", "json", str(data / rel)],
                       capture_output=True, text=True, env=env, cwd="/tmp", timeout=300)
    try:
        rep = json.loads(p.stdout)
    except Exception:
        return rel, {"rc": p.returncode, "error": p.stderr[-500:]}
    fs = []
    def walk(x):
        if isinstance(x, dict):
            if "rule" in x and "severity" in x:
                fs.append({"rule": x["rule"], "severity": x["severity"], "message": str(x.get("message", ""))[:600], "fix": str(x.get("fix", ""))[:400]})
            else:
                for v in x.values(): walk(v)
        elif isinstance(x, list):
            for v in x: walk(v)
    walk(rep)
    return rel, {"rc": p.returncode, "findings": fs, "healthy": r.get("healthy"), "core": r.get("core"), "settled": r.get("settled_cause", "")}

with ThreadPoolExecutor(jobs) as ex:
    res = dict(ex.map(run, rows))
out.write_text(json.dumps(res, indent=1, sort_keys=True))
print(len(res), "logs")
