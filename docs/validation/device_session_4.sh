#!/usr/bin/env bash
# The fourth device session, on nvidia-h200-x2 (two H200s), after the five wheel-chunk calls
# (probe_vllm_gpu.sh says how /tmp/parts/part.* get there); one call per PART.
#   bash docs/validation/device_session_4.sh split           # one process, both GPUs: model by path / as object
#   bash docs/validation/device_session_4.sh split-colocate  # grpo_log_gpu.py oom 0.6: both GPUs visible / GPU 0 only
set -u
. "$(dirname "$0")/vllm_site.sh" || exit 1
export PYTHONPATH=/tmp/vsite:$PWD PATH=/tmp/vsite/bin:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
# NVML per GPU and pid every 200 ms while CMD runs; prints each pid's peak per GPU (MiB)
sampled() {
  nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv,noheader,nounits -lms 200 > /tmp/smi.csv &
  local smi=$!; "$@"; local rc=$?; kill $smi; wait $smi 2>/dev/null
  echo "[exit $rc]"
  awk -F', ' '{k=$1" pid "$2; if ($3>m[k]) m[k]=$3} END {for (k in m) print "  peak " k ": " m[k] " MiB"}' /tmp/smi.csv | sort
}
case "$1" in
split)
  for how in path object; do
    echo "\$ python3 docs/validation/split_model_gpu.py $how   # both GPUs visible"
    timeout 150 python3 docs/validation/split_model_gpu.py $how > "$OUT/split-$how.log" 2>&1
    echo "[exit $?]"; grep '^{"given"' "$OUT/split-$how.log"
  done ;;
split-colocate)
  echo "\$ python3 docs/validation/grpo_log_gpu.py oom 0.6   # both GPUs visible"
  sampled timeout 230 python3 docs/validation/grpo_log_gpu.py oom 0.6 > "$OUT/colocate-0.6-both.log" 2>&1
  echo "\$ CUDA_VISIBLE_DEVICES=0 python3 docs/validation/grpo_log_gpu.py oom 0.6"
  CUDA_VISIBLE_DEVICES=0 sampled timeout 230 python3 docs/validation/grpo_log_gpu.py oom 0.6 > "$OUT/colocate-0.6-gpu0.log" 2>&1
  grep -h "OutOfMemoryError: CUDA out of memory\|'train_runtime'" "$OUT"/colocate-0.6-*.log | cut -c1-400 ;;
esac
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
