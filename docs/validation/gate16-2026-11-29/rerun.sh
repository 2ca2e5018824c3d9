#!/bin/bash
# rerun.sh TREE OUT < "SETNAME CASE" lines: run those setups with TREE's harness and code, splice into
# OUT/SETNAME.json (created where missing; a setup that gave no result is recorded {"missing": true})
TREE=$1; OUT=$2; V=$(cd "$(dirname "$0")/.." && pwd); mkdir -p $OUT
while read name case; do
  parts=(${name//_/ }); base=$V/${parts[0]}; [ -n "${parts[1]}" ] && base=$base/${parts[1]}
  if [ -d $base/setups ]; then data=$base; else data=${TMPDIR:-/tmp}/gate16-data/$name; mkdir -p $data; ln -sfn $base $data/setups; fi
  tmp=${TMPDIR:-/tmp}/gate16-one_$$.json; rm -f $tmp
  HELDOUT_ONLY="$case" HELDOUT_DATA=$data PYTHONPATH=$TREE nice -n 10 /work/main/.venv-ci/bin/python $TREE/bench/heldout_eval.py setups $tmp > /dev/null 2>&1
  python3 - "$OUT/$name.json" $tmp "$case" <<'PY'
import json, os, sys
out, one, case = sys.argv[1:]
d = json.load(open(out)) if os.path.exists(out) else {}
o = json.load(open(one)) if os.path.exists(one) else {}
d[case] = o.get(case, {"missing": True})
json.dump(d, open(out, "w"), indent=1)
print("spliced", case[:70])
PY
done
