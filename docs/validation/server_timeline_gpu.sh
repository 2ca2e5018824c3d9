#!/usr/bin/env bash
# Where the probe server's start goes (issue #38 item 5), on two GPUs: module bytecode compiled
# first (as pip leaves an installed vLLM), then two cold starts side by side (the probe's private
# caches fresh; the second with vLLM's FlashInfer sampler off), then a warm start on the first
# start's caches. Needs the wheel chunks in /tmp/parts (vllm_site.sh). Output under $OUT.
#   bash docs/validation/server_timeline_gpu.sh
set -u
. "$(dirname "$0")/vllm_site.sh" || exit 1
export PYTHONPATH=/tmp/vsite:$PWD PATH=/tmp/vsite/bin:$PATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
S=docs/validation/server_timeline_gpu.py
nvidia-smi -L
now() { python3 -c 'import time; print(time.time())'; }
t=$(now); python3 -m compileall -q -j 0 /tmp/vsite >/dev/null 2>&1
python3 -c "import time; print(f'bytecode compiled in {time.time() - $t:.1f} s')"
t=$(now); python3 -c "import vllm.entrypoints.openai.api_server, trl.cli" >/dev/null 2>&1
python3 -c "import time; print(f'import of vllm API server + trl CLI: {time.time() - $t:.1f} s')"
python3 $S "$OUT" 0 cold /tmp/cache-a &
python3 $S "$OUT" 1 cold-no-fi-sampler /tmp/cache-c VLLM_USE_FLASHINFER_SAMPLER=0 &
wait
du -sh /tmp/cache-a/* 2>/dev/null | sort -h | tail -8
python3 $S "$OUT" 0 warm /tmp/cache-a
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
