#!/bin/bash
# usage: runall.sh TREE OUTDIR: bench/heldout_eval.py setups on every dev set
# (docs/validation/heldout-2026-11-2*/…/setups) with TREE's envdoctor, two sets at a time
TREE=$1; OUT=$2; mkdir -p $OUT
cd $TREE
sets=$(find $TREE/docs/validation -maxdepth 3 -type d -name setups -path "*heldout-2026-11-2*" | sort)
lane() {
  for s in "$@"; do
    name=$(echo ${s#$TREE/docs/validation/} | sed 's#/setups$##; s#/#_#g')
    HELDOUT_DATA=$(dirname $s) python bench/heldout_eval.py setups $OUT/$name.json > $OUT/$name.log 2>&1
  done
}
arr=($sets); a=(); b=()
for i in "${!arr[@]}"; do if (( i % 2 )); then b+=(${arr[$i]}); else a+=(${arr[$i]}); fi; done
lane "${a[@]}" & lane "${b[@]}" & wait
