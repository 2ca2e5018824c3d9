#!/usr/bin/env bash
# The fifth memory run (issue 16) on nvidia-h200-x2, one call on a bare machine (no vLLM):
#   bash docs/validation/device_session_5.sh      (carry .wt/fifth: trl-1.16.0, datasets-5.2.0,
#   dill, multiprocess wheels from .wt/memory/whl; deepspeed-0.19.8 and hjson from .wt/ds)
# b1 (a reference model, beta 0.04) on GPU 0, then z1 (ZeRO-1) on both GPUs.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .wt/fifth/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
M=docs/validation/memory_gpu.py
J=$OUT/memory-gpu-h200x2.jsonl
echo "\$ CUDA_VISIBLE_DEVICES=0 python3 $M \$OUT/memory-gpu-h200x2.jsonl b1"
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 $M "$J" b1 > "$OUT/memory-gpu-h200x2-b1.log" 2>&1
echo "[exit $?]"; grep '^{"shape"' "$OUT/memory-gpu-h200x2-b1.log" | cut -c1-400
python3 $M --accelerate-config zero1 > /tmp/zero1.json
echo "\$ accelerate launch --config_file zero1.json $M \$OUT/memory-gpu-h200x2.jsonl z1"
timeout 280 accelerate launch --config_file /tmp/zero1.json $M "$J" z1 > "$OUT/memory-gpu-h200x2-z1.log" 2>&1
echo "[exit $?]"; grep '^{"shape"' "$OUT/memory-gpu-h200x2-z1.log" | cut -c1-400
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
