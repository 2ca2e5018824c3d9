#!/usr/bin/env bash
# The server-split probe on two GPUs (issue #38 item 5) on a machine where vLLM never ran, then
# after the user's own vLLM start filled the user's caches (~/.triton/cache, ~/.cache/vllm),
# which the probe now reads (never writes). Needs the wheel chunks in /tmp/parts (vllm_site.sh).
#   bash docs/validation/server_split_caches_gpu.sh cold     # the never-ran machine, then the user's start
#   bash docs/validation/server_split_caches_gpu.sh warm     # twice, after the user's start
set -u
. "$(dirname "$0")/vllm_site.sh" || exit 1
export PYTHONPATH=/tmp/vsite:$PWD PATH=/tmp/vsite/bin:$PATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
if [ "${1:-}" = cold ]; then
  python3 -m compileall -q -j 0 /tmp/vsite >/dev/null 2>&1  # bytecode, as pip leaves an install
  rm -rf ~/.triton ~/.cache/vllm ~/.cache/flashinfer
  echo "=== 1. the probe on a machine where vLLM never ran (the user's caches empty)"
  SERVER_GPU=1 bash docs/validation/probe_vllm_gpu.sh server server
  echo "=== the user's own vLLM start, with vLLM's default caches"
  python3 docs/validation/server_start_gpu.py "$OUT" 1 users-own-start
  du -sh ~/.triton/cache ~/.cache/vllm 2>/dev/null
  sleep 1; touch /tmp/users-start-done
else
  for i in 1 2; do
    echo "=== $((i + 1)). the probe after the user's own start"
    SERVER_GPU=1 bash docs/validation/probe_vllm_gpu.sh server server
    find ~/.triton/cache -newer /tmp/users-start-done | wc -l | sed 's/^/files written to the user'"'"'s Triton cache since the user'"'"'s start: /'
  done
fi
