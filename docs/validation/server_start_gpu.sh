#!/usr/bin/env bash
# Where the probe server's start goes on two H200s (issue #38 item 5). Needs the vLLM 0.26 + TRL
# 1.16 wheel chunks in /tmp/parts (vllm_site.sh). The first start runs with vLLM's and TRL's
# modules not yet byte-compiled (the wheels are installed with --no-compile, as in every device
# run of the probe); the next two start from compiled modules, one with vLLM's FlashInfer sampler
# off. Output: server-start-*.log under $OUT.
#   bash docs/validation/server_start_gpu.sh
set -u
. "$(dirname "$0")/vllm_site.sh" || exit 1
export PYTHONPATH=/tmp/vsite:$PWD PATH=/tmp/vsite/bin:$PATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
S=docs/validation/server_start_gpu.py
nvidia-smi -L
python3 $S "$OUT" 1 cold-bytecode
python3 $S "$OUT" 0 compiled &
python3 $S "$OUT" 1 compiled-no-flashinfer-sampler VLLM_USE_FLASHINFER_SAMPLER=0 &
wait
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
