import json, sys
from collections import Counter
b = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2]))
def counts(d):
    c = Counter()
    for r in d.values():
        for f in r.get("findings", []):
            c[f"{f['rule']}:{f['severity']}"] += 1
    return c
cb, ca = counts(b), counts(a)
print("rule:severity before -> after (changed only)")
for k in sorted(set(cb) | set(ca)):
    if cb[k] != ca[k]:
        print(f"  {k}: {cb[k]} -> {ca[k]}")
def verdict(r):
    fs = r.get("findings", [])
    top = "error" if any(f["severity"] == "error" for f in fs) else "warning" if any(f["severity"] == "warning" for f in fs) else "info" if fs else "none"
    return top, tuple(sorted({f["rule"] for f in fs if f["severity"] == top}))
n_changed = 0
healthy_gain = []
for k in sorted(b):
    if k not in a: continue
    rb, ra = b[k], a[k]
    sb = {(f["rule"], f["severity"], f["message"][:200]) for f in rb.get("findings", [])}
    sa = {(f["rule"], f["severity"], f["message"][:200]) for f in ra.get("findings", [])}
    if rb.get("healthy") and (sa - sb):
        healthy_gain.append(k)
    if verdict(rb) != verdict(ra) or sa != sb:
        n_changed += 1
        print(f"\n{k} (healthy={rb.get('healthy')}, core={rb.get('core')}): {verdict(rb)} -> {verdict(ra)}; rc {rb.get('rc')} -> {ra.get('rc')}")
        print("   settled:", rb.get("settled", "")[:300])
        for f in ra.get("findings", []):
            if (f["rule"], f["severity"], f["message"][:200]) not in sb:
                print(f"   + {f['rule']} {f['severity']}: {f['message'][:400]}")
                print(f"       fix: {f['fix'][:300]}")
        for f in rb.get("findings", []):
            if (f["rule"], f["severity"], f["message"][:200]) not in sa:
                print(f"   - {f['rule']} {f['severity']}: {f['message'][:300]}")
print("\nlogs changed:", n_changed, "of", len(b))
print("healthy logs gaining a finding:", healthy_gain or "none")
print("healthy logs:", sum(1 for r in b.values() if r.get("healthy")))
