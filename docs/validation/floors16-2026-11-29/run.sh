#!/bin/bash
# run.sh TREE OUT < rerun_list.txt: run TREE's bench/heldout_eval.py setups on each listed setup
# ("SETNAME CASE"), gathering the results in OUT/SETNAME.json (gate16's rerun.sh, into fresh files)
TREE=$1; OUT=$2; V=$(cd "$(dirname "$0")/.." && pwd); mkdir -p $OUT
while read name case; do
  parts=(${name//_/ }); base=$V/${parts[0]}; [ -n "${parts[1]}" ] && base=$base/${parts[1]}
  if [ -d $base/setups ]; then data=$base; else data=${TMPDIR:-/tmp}/floors16-data/$name; mkdir -p $data; ln -sfn $base $data/setups; fi
  tmp=${TMPDIR:-/tmp}/floors16-one_$$.json; rm -f $tmp
  HELDOUT_ONLY="$case" HELDOUT_DATA=$data PYTHONPATH=$TREE nice -n 10 /work/main/.venv-ci/bin/python $TREE/bench/heldout_eval.py setups $tmp > /dev/null 2>&1
  python3 - "$OUT/$name.json" $tmp "$case" <<'PY'
import json, os, sys
out, one, case = sys.argv[1:]
d = json.load(open(out)) if os.path.exists(out) else {}
o = json.load(open(one)) if os.path.exists(one) else {}
d[case] = o.get(case, {"missing": True})
json.dump(d, open(out, "w"), indent=1)
print("ran", case[:70])
PY
done
