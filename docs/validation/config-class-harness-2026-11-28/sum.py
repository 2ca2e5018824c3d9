"""per set: healthy n/clean, broken n/with-error/fixed(no error after fix)/added; usage: sum.py TAG [TAG2] (prints table)"""
import json,sys,os
SETS=['a','b','c','d','e','f','g','h']
def data(s): return f"docs/validation/heldout-2026-11-28{'' if s=='a' else s}/setups"
def summ(tag,s):
    p=f'docs/validation/config-class-harness-2026-11-28/{tag}_set{s}.json'
    if not os.path.exists(p): return None
    R=json.load(open(p)); t=dict(hn=0,hclean=0,bn=0,berr=0,bfixed=0,added=0,rc2=0)
    for name,r in R.items():
        lab=json.load(open(f'{data(s)}/{name}/label.json'))
        healthy=lab['healthy']
        ch=r.get('check',{}); fs=[f for f in ch.get('findings',[]) if f['severity']!='info']
        errs=[f for f in fs if f['severity']=='error']
        fx=r.get('fix',{}); after=fx.get('after_findings'); before=fx.get('before_findings')
        added=[a for a in (after or []) if a not in (before or [])]
        t['rc2']+=ch.get('rc')==2
        if healthy:
            t['hn']+=1; t['hclean']+= (not fs and ch.get('rc')!=2)
        else:
            t['bn']+=1
            if errs:
                t['berr']+=1
                if after is not None and not any(a.endswith(':error') for a in after): t['bfixed']+=1
        t['added']+=bool(added)
    return t
tags=sys.argv[1:]
print("set | "+" | ".join(f"{tg}: healthy clean, broken w/ error, fixed, fix-added" for tg in tags))
tot={tg:dict(hn=0,hclean=0,bn=0,berr=0,bfixed=0,added=0,rc2=0) for tg in tags}
for s in SETS:
    row=[]
    for tg in tags:
        t=summ(tg,s)
        if t is None: row.append("-"); continue
        for k in t: tot[tg][k]+=t[k]
        row.append(f"{t['hclean']}/{t['hn']}, {t['berr']}/{t['bn']}, {t['bfixed']}/{t['berr']}, {t['added']}")
    print(f"{s} | "+" | ".join(row))
print("all | "+" | ".join(f"{t['hclean']}/{t['hn']}, {t['berr']}/{t['bn']}, {t['bfixed']}/{t['berr']}, {t['added']}" for t in tot.values()))
