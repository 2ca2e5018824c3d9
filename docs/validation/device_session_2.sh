#!/usr/bin/env bash
# One device call after the wheel-chunk calls (see probe_vllm_gpu.sh): the memory shapes of the
# second run, a real GRPO log (colocate, 40 steps) and the probe's colocate path with the check
# that nothing of it lands in $HOME.   bash docs/validation/device_session_2.sh PART
set -u
. "$(dirname "$0")/vllm_site.sh" || exit 1
[ -f /tmp/msite/.done ] || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --target /tmp/msite .wt/memory/whl/peft-*.whl && touch /tmp/msite/.done; } || exit 1
export PYTHONPATH=/tmp/vsite:/tmp/msite:$PWD PATH=/tmp/vsite/bin:$PATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi -L
python3 -c "import importlib.metadata as m; print({p: m.version(p) for p in ('torch','vllm','trl','transformers','peft')})"
case "$1" in
memory)
  echo "\$ python3 docs/validation/memory_gpu.py \$OUT/memory-gpu-h100-2.jsonl l1 l2 s9 s10 s11 s8"
  timeout 560 python3 docs/validation/memory_gpu.py "$OUT/memory-gpu-h100-2.jsonl" l1 l2 s9 s10 s11 s8
  echo "[exit $?]" ;;
log)
  echo "\$ python3 docs/validation/grpo_log_gpu.py 40 > \$OUT/grpo-colocate-h100.log 2>&1"
  timeout 300 python3 docs/validation/grpo_log_gpu.py 40 > "$OUT/grpo-colocate-h100.log" 2>&1
  echo "[exit $?]"; tail -5 "$OUT/grpo-colocate-h100.log"
  ls -a ~/.cache ~/.config 2>&1 | head -20
  echo "\$ python3 docs/validation/probe_vllm_gpu.py colocate"
  before=$(find ~ -newer /tmp/vsite/.done 2>/dev/null | wc -l)
  touch /tmp/probe-start
  timeout 250 python3 docs/validation/probe_vllm_gpu.py colocate
  echo "[exit $?]"
  echo "files written under \$HOME during the probe:"; find ~ -newer /tmp/probe-start 2>/dev/null | grep -v "^$HOME$" | head -20
  echo "(end of list)" ;;
log2)
  echo "\$ python3 docs/validation/grpo_log_gpu.py 40 4 > \$OUT/grpo-colocate-b4-h100.log 2>&1"
  timeout 200 python3 docs/validation/grpo_log_gpu.py 40 4 > "$OUT/grpo-colocate-b4-h100.log" 2>&1
  echo "[exit $?]"; tail -3 "$OUT/grpo-colocate-b4-h100.log"
  rm -rf ~/.humming; touch /tmp/probe-start
  echo "\$ python3 docs/validation/probe_vllm_gpu.py colocate8"
  timeout 250 python3 docs/validation/probe_vllm_gpu.py colocate8
  echo "[exit $?]"
  echo "files written under \$HOME during the probe:"; find ~ -newer /tmp/probe-start 2>/dev/null | grep -v "^$HOME$" | head -20
  echo "(end of list)" ;;
esac
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
