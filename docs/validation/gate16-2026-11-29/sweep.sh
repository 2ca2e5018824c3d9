#!/bin/bash
# sweep.sh TREE OUTDIR: run TREE's bench/heldout_eval.py setups over every dev setup folder
# (setups/, setupsNN/setups/, and the flat setups2/ setupsA/ setupsB/ through a folder holding a setups link); niced, one set at a time
TREE=$1; OUT=$2; mkdir -p $OUT
V=$(cd "$(dirname "$0")/.." && pwd)
for d in $V/heldout-2026-11-2*/setups $V/heldout-2026-11-2*/*/setups $V/heldout-2026-11-28e/setups2 $V/heldout-2026-11-28f/setups2 $V/heldout-2026-11-29b/setupsA $V/heldout-2026-11-29b/setupsB; do
  rel=${d#$V/}; parent=$(dirname $rel)
  if [ "$(basename $d)" = setups ]; then data=$V/$parent; name=$(echo $parent | sed 's#/#_#g');
  else name=$(echo $rel | sed 's#/#_#g'); data=${TMPDIR:-/tmp}/gate16-data/$name; mkdir -p $data; ln -sfn $d $data/setups; fi
  [ -s $OUT/$name.json ] && continue
  echo "$(date -u +%T) $name"
  HELDOUT_DATA=$data PYTHONPATH=$TREE nice -n 10 /work/main/.venv-ci/bin/python $TREE/bench/heldout_eval.py setups $OUT/$name.json.tmp > $OUT/$name.log 2>&1 && mv $OUT/$name.json.tmp $OUT/$name.json
done
echo done
