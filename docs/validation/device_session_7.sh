#!/usr/bin/env bash
# The seventh memory run (issue #38, item 4) on nvidia-h200-x2, one call on a bare machine (no
# vLLM): 3B and 7B shapes, predicted first (memory-predicted-before-run.md, "Seventh run").
#   bash docs/validation/device_session_7.sh   (carry .wt/seventh: pip download --no-deps
#   trl==1.16.0 datasets==5.2.0 dill==0.4.1 hjson einops py-cpuinfo; for Python 3.12:
#   multiprocess==0.70.19 msgpack ninja pydantic==2.14.3 pydantic-core==2.50.4 annotated-types
#   typing-inspection (DeepSpeed imports pydantic: the image lacks it);
#   DS_BUILD_OPS=0 pip wheel --no-deps --no-build-isolation deepspeed==0.19.8)
#   bash docs/validation/device_session_7.sh single   # single-rank shapes, two queues, a GPU each
#   bash docs/validation/device_session_7.sh zero3    # ZeRO-3 on both GPUs (the next call)
set -u
[ -f /tmp/site/.done ] || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .wt/seventh/*.whl && touch /tmp/site/.done; } || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# accelerate sets 1 thread per rank unless told: a 7B model built on the CPU then takes minutes
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-16}
nvidia-smi -L
python3 -c "import importlib.metadata as m; print({p: m.version(p) for p in ('torch','trl','transformers','accelerate','peft','deepspeed')})"
M=docs/validation/memory_gpu.py
J=$OUT/memory-gpu-h200x2-k.jsonl
if [ "$1" = single ]; then
echo "\$ CUDA_VISIBLE_DEVICES=0 python3 $M \$OUT/memory-gpu-h200x2-k.jsonl k5 ; k6 ; k1"
echo "\$ CUDA_VISIBLE_DEVICES=1 python3 $M \$OUT/memory-gpu-h200x2-k-g1.jsonl k7 ; k2 ; k3"
( for s in k5 k6 k1; do CUDA_VISIBLE_DEVICES=0 timeout 170 python3 $M "$J" $s > "$OUT/memory-gpu-h200x2-$s.log" 2>&1; echo "[$s exit $?]"; done ) &
( for s in k7 k2 k3; do CUDA_VISIBLE_DEVICES=1 timeout 170 python3 $M "${J%.jsonl}-g1.jsonl" $s > "$OUT/memory-gpu-h200x2-$s.log" 2>&1; echo "[$s exit $?]"; done ) &
wait
grep -h '^{"shape"' "$OUT"/memory-gpu-h200x2-k?.log | cut -c1-300
fi
if [ "$1" = zero3 ]; then
python3 $M --accelerate-config zero3 > /tmp/zero3.json
for s in ${ZERO_SHAPES:-k4 k8}; do
  echo "\$ accelerate launch --config_file zero3.json $M \$OUT/memory-gpu-h200x2-k.jsonl $s"
  timeout ${ZERO_TIMEOUT:-230} accelerate launch --config_file /tmp/zero3.json $M "$J" $s > "$OUT/memory-gpu-h200x2-$s.log" 2>&1
  echo "[$s exit $?]"; grep '^{"shape"' "$OUT/memory-gpu-h200x2-$s.log" | cut -c1-300
done
fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
