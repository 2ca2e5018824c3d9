#!/usr/bin/env bash
# The live probe on real GPUs (issue 5), run by the device tool from the repository root on a
# 2-GPU machine. Wheels travel in .whl/modern (trl 1.16.0, datasets 5.2.0, dill, multiprocess)
# and .whl/legacy (trl 0.15.2, transformers 4.49.0, tokenizers 0.21.1, huggingface_hub 0.29.3,
# datasets 3.3.2, dill, multiprocess); the machine has torch 2.11, transformers 5.17, accelerate.
set -u
W="python3 -m pip install -q --no-index --no-deps --no-cache-dir --target"
$W /tmp/modern .whl/modern/*.whl && $W /tmp/legacy .whl/legacy/*.whl || exit 1
export PYTHONUNBUFFERED=1 NO_COLOR=1 CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_NVLS_ENABLE=0
MODERN=/tmp/modern:$PWD LEGACY=/tmp/legacy:$PWD
run() { echo; echo "\$ $*"; local t=$(date +%s%N); "$@"; local rc=$?; echo "[exit $rc, $(( ($(date +%s%N) - t) / 1000000 )) ms]"; }
nvidia-smi -L
# A stand-in for the vLLM server on GPU 1: a process named like `trl vllm-serve`, holding 60 GiB.
mkdir -p /tmp/standin && cat > /tmp/standin/vllm-serve-standin.py <<'PY'
import time, torch
x = torch.empty(60 * 2**30, dtype=torch.uint8, device="cuda")
print("stand-in vLLM server holds 60 GiB on GPU 1", flush=True)
time.sleep(900)
PY
CUDA_VISIBLE_DEVICES=1 python3 /tmp/standin/vllm-serve-standin.py & HOLDER=$!
sleep 12
printf 'use_vllm: true\nvllm_mode: server\nnum_generations: 2\nper_device_train_batch_size: 2\n' > /tmp/server.yaml
printf 'use_vllm: true\nvllm_device: cuda:1\nnum_generations: 2\nper_device_train_batch_size: 2\n' > /tmp/legacy.yaml
echo; echo "=== 1. healthy: trainer on GPU 0 (CUDA_VISIBLE_DEVICES=0), GPU 1 held by the stand-in"
PYTHONPATH=$MODERN run python3 -m envdoctor check --probe --no-network -v --config /tmp/server.yaml -- CUDA_VISIBLE_DEVICES=0 python3 train.py
echo; echo "=== 1b. healthy through accelerate: --num_processes 1 --gpu_ids 0"
PYTHONPATH=$MODERN run python3 -m envdoctor check --probe --no-network --config /tmp/server.yaml -- accelerate launch --num_processes 1 --gpu_ids 0 train.py
echo; echo "=== 2. the seeds' trap on the legacy stack (TRL 0.15.2 + transformers 4.49): one process, both GPUs visible"
PYTHONPATH=$LEGACY run python3 -m envdoctor check --probe --no-network -v --config /tmp/legacy.yaml -- python3 train.py
echo; echo "=== 3. the same layout on the current stack (TRL 1.16): TRL's own refusal"
PYTHONPATH=$MODERN run python3 -m envdoctor check --probe --no-network --config /tmp/server.yaml -- python3 train.py
echo; echo "=== 4. the legacy fix: torchrun --nproc_per_node 1 (both GPUs visible, one rank)"
PYTHONPATH=$LEGACY run python3 -m envdoctor check --probe --no-network --config /tmp/legacy.yaml -- torchrun --nproc_per_node 1 train.py
echo; echo "=== 5. no probe process left, GPU memory after the probes"
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
kill $HOLDER; wait $HOLDER 2>/dev/null
echo; echo "=== 6. two ranks, one per GPU (torchrun --nproc_per_node 2, NCCL)"
PYTHONPATH=$MODERN run python3 -m envdoctor probe -- torchrun --nproc_per_node 2 train.py
echo; echo "=== 7. GPU tests"
PYTHONPATH=$MODERN run python3 -m pytest -q -p no:cacheprovider tests/probe/test_probe_gpu.py tests/facts/test_gpu_real.py
echo; echo "=== 8. breakdown (bench/probe_breakdown.py), 1 and 2 ranks"
PYTHONPATH=$MODERN CUDA_VISIBLE_DEVICES=0 run python3 bench/probe_breakdown.py --runs 3
PYTHONPATH=$MODERN run python3 bench/probe_breakdown.py --runs 2 --launch "torchrun --nproc_per_node 2"
