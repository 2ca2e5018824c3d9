#!/bin/bash
# rerun the given setups (set dir relative to docs/validation, case name) with TREE's envdoctor; splice into OUT/<set>.json
TREE=$1; OUT=$2; shift 2
cd $TREE
while read rel case; do
  setname=$(echo $rel | sed 's#/#_#g')
  tmp=/tmp/g13_one_$$.json
  HELDOUT_ONLY="$case" HELDOUT_DATA=$TREE/docs/validation/$rel PATH=/work/main/.venv-ci/bin:$PATH PYTHONPATH=$TREE python bench/heldout_eval.py setups $tmp > /dev/null 2>&1
  python3 - "$OUT/$setname.json" $tmp "$case" <<'PY'
import json,sys
out,one,case=sys.argv[1:]
d=json.load(open(out)); o=json.load(open(one))
for k,v in o.items():
    if k==case: d[k]=v
json.dump(d,open(out,'w'),indent=1)
print("spliced",case[:60])
PY
done
