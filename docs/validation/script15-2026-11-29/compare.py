import json, sys, pathlib
sets = ["29c_setups11a","29c_setups11b","29c_setups11c","29d_setups12a","29d_setups12b","29e_setups13a","29e_setups13b","29f_setups14a","29f_setups14b"]
root = pathlib.Path("docs/validation")
tot = {"healthy":0,"broken":0}
caught = {"base":0,"after":0}
for s in sets:
    b = pathlib.Path(f"docs/validation/script15-2026-11-29/base_{s}.json"); a = pathlib.Path(f"docs/validation/script15-2026-11-29/after_{s}.json")
    if not (b.exists() and a.exists()): print(s, "missing"); continue
    B, A = json.loads(b.read_text()), json.loads(a.read_text())
    d, sub = s.split("_")
    for name in sorted(B):
        lab = json.loads((root / f"heldout-2026-11-{d}" / sub / "setups" / name / "label.json").read_text())
        h = lab.get("healthy")
        fb = {(f["rule"], f["severity"]) for f in B[name]["check"]["findings"]}
        fa = {(f["rule"], f["severity"]) for f in A.get(name, {}).get("check", {}).get("findings", [])}
        kind = "healthy" if h else "broken"
        tot[kind]+=1
        err = lambda fs: any(sev in ("error","warning") for _, sev in fs)
        if not h:
            caught["base"] += any(sev=="error" for _,sev in fb); caught["after"] += any(sev=="error" for _,sev in fa)
        if fb != fa:
            print(f"{s} {kind:7} {name[:60]}: +{sorted(fa-fb)} -{sorted(fb-fa)}")
        rb, ra = B[name]["check"]["rc"], A.get(name, {}).get("check", {}).get("rc")
        if rb != ra: print(f"   rc {rb} -> {ra}")
print(tot, "broken with an error:", caught)
