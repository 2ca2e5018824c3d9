#!/usr/bin/env bash
# The probe's model budget on a GPU (issue #37: "the budget holds for every shape"), one call on
# a bare nvidia-h100-x1 (no vLLM; carry .wt/seventh, the wheels of device_session_7.sh):
#   bash docs/validation/probe_budget_gpu.sh
# Two user models given by a local config.json (nothing downloaded): Qwen2.5-7B's shape and a
# hostile one (a 3,000,000-token vocabulary × 4096 hidden). The probe must keep its parameter
# budget (1.5 B) for both, say what it reduced (probe.model.deviations), run one real GRPO step
# on the GPU, and leave nothing behind.
set -u
[ -f /tmp/site/.done ] || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --target /tmp/site .wt/seventh/*.whl && touch /tmp/site/.done; } || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NO_COLOR=1
nvidia-smi -L
mkdir -p /tmp/m7 /tmp/mbig
python3 - <<'PY'
import json
q7 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
      "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
      "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False,
      "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1e6, "torch_dtype": "bfloat16"}
json.dump(q7, open("/tmp/m7/config.json", "w"))
json.dump({**q7, "vocab_size": 3_000_000, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8}, open("/tmp/mbig/config.json", "w"))
PY
for m in m7 mbig; do
  printf 'use_vllm: false\nnum_generations: 2\nper_device_train_batch_size: 2\nmax_completion_length: 16\nmodel_name_or_path: /tmp/%s\n' $m > /tmp/$m.yaml
  echo; echo "\$ envdoctor check --probe --no-network --config $m.yaml -- python3 train.py"
  t=$(date +%s)
  python3 -m envdoctor check --probe --no-network -v --format json -o "$OUT/probe-budget-$m.json" \
    --config /tmp/$m.yaml -- python3 train.py > "$OUT/probe-budget-$m.txt" 2>&1
  echo "[exit $?, $(( $(date +%s) - t )) s]"
  python3 - "$OUT/probe-budget-$m.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
probe = r.get("probe") or {}
model = probe.get("model") or {}
print({k: model.get(k) for k in ("source", "parameters", "deviations")})
print([(f["rule"], f["severity"], f["message"][:160]) for f in r["findings"] if f["severity"] != "info"])
PY
done
echo; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
