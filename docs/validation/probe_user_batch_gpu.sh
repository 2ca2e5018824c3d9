#!/usr/bin/env bash
# The probe's step on the user's first batch with the user's reward functions (issue #40 item 3)
# on one GPU, TRL's colocated vLLM at 0.3: a healthy TRL-style script (TRL's think_format_reward
# and the script's own accuracy reward, a dataset saved with `datasets`) and the same script with
# planted faults (a reward needing a column the data lacks, one returning None, one NaN, one of
# the wrong length, one that raises). Needs vLLM 0.26 unpacked in /tmp/vsite (vllm_site.sh) and
# envdoctor's resolvelib (.wt/extra) beside TRL's wheels (.wt/seventh).
#   bash docs/validation/probe_user_batch_gpu.sh > $OUT/probe-user-batch-gpu.log 2>&1
set -u
. "$(dirname "$0")/vllm_site.sh" || exit 1
[ -f /tmp/site/.done ] || { python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
  .wt/seventh/*.whl .wt/extra/*.whl && touch /tmp/site/.done; } || exit 1
CODE=$PWD
export PYTHONPATH=/tmp/vsite:/tmp/site:$CODE PATH=/tmp/vsite/bin:/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 NO_COLOR=1
export CUDA_VISIBLE_DEVICES=0 NCCL_NVLS_ENABLE=0
nvidia-smi -L
W=$(mktemp -d /tmp/user-batch-XXXX)
cd "$W"
python3 - <<'PY'
import datasets
rows = [{"prompt": [{"role": "system", "content": "Think in <think></think>, then answer."},
                    {"role": "user", "content": f"What is {i} + {i}?"}], "solution": str(2 * i)}
        for i in range(16)]
datasets.Dataset.from_list(rows).save_to_disk("data")
PY
cat > healthy.py <<'PY'
"""A TRL-style GRPO script: the training code under the __main__ guard."""
from datasets import load_from_disk
from trl import GRPOConfig, GRPOTrainer
from trl.rewards import think_format_reward

def accuracy(completions, solution, **kwargs):
    return [1.0 if s in c[0]["content"] else 0.0 for c, s in zip(completions, solution)]

if __name__ == "__main__":
    trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B-Instruct", reward_funcs=[think_format_reward, accuracy],
                          args=GRPOConfig(output_dir="out"), train_dataset=load_from_disk("data"))
    trainer.train()
PY
cat > planted.py <<'PY'
"""The same script with planted faults in its rewards."""
import math
from datasets import load_from_disk
from trl import GRPOConfig, GRPOTrainer

def needs_answer(completions, answer, **kwargs):  # the dataset's column is "solution"
    return [0.0] * len(completions)

def returns_none(completions, **kwargs):
    scores = [1.0 for _ in completions]

def nan_reward(completions, **kwargs):
    return [math.nan for _ in completions]

def one_reward(completions, **kwargs):
    return [1.0]

def raises(completions, **kwargs):
    return [len(c[0]["content"]) / 0 for c in completions]

if __name__ == "__main__":
    trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B-Instruct",
                          reward_funcs=[needs_answer, returns_none, nan_reward, one_reward, raises],
                          args=GRPOConfig(output_dir="out"), train_dataset=load_from_disk("data"))
    trainer.train()
PY
printf 'dataset_name: %s/data\nuse_vllm: true\nvllm_mode: colocate\nvllm_gpu_memory_utilization: 0.3\nnum_generations: 2\nper_device_train_batch_size: 4\nmax_completion_length: 32\nbf16: true\n' "$W" > grpo.yaml
for s in healthy planted; do
  echo; echo "\$ envdoctor check --probe --config grpo.yaml -- python3 $s.py"
  t=$(date +%s)
  timeout 400 python3 -m envdoctor check --probe --no-network --config grpo.yaml --format json -- python3 $s.py > "$OUT/probe-user-batch-$s.json" 2> "$OUT/probe-user-batch-$s.err"
  echo "[exit $?, $(( $(date +%s) - t )) s]"
  python3 - "$OUT/probe-user-batch-$s.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
area = next(a for a in r["areas"] if a["key"] == "probe")
print("probe:", area["summary"][:600])
p = r.get("probe") or {}
d = p.get("data") or {}
print("data:", {k: d.get(k) for k in ("source", "used", "rows_passed", "columns", "rows_over_length", "chat_template")})
for f in (p.get("rewards") or {}).get("functions", []):
    print("reward:", f.get("name"), f.get("called"), f.get("shape"), f.get("where"), [str(e)[:140] for e in f.get("errors", [])])
for f in r["findings"]:
    if f["rule"].startswith(("DAT", "PRB")) or f["severity"] == "error":
        print(" ", f["severity"], f["rule"], f["message"][:260])
PY
done
cd / && rm -rf "$W"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
