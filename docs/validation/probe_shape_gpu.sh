#!/usr/bin/env bash
# The probe runs the config's batch shape and precision (issue 5 follow-up), on a 2-GPU machine,
# from the repository root; TRL 1.16 + datasets travel in .whl/modern (carry: [".whl"]).
#
#   bash docs/validation/probe_shape_gpu.sh 2>&1 | tee $OUT/probe_shape_gpu.log
#
# 1. a config whose shape TRL accepts, 2 ranks (torchrun, NCCL): the probe passes with that shape
# 2. fp16 from the config (bf16 off): passes in fp16
# 3. a shape TRL refuses at init (global batch 2 × 3 = 6, num_generations 4): CFG002 from the
#    rules *and* TRL's own refusal from the probe
# 4. the GPU tests
set -u
python3 -m pip install -q --no-index --no-deps --no-cache-dir --target /tmp/modern .whl/modern/*.whl || exit 1
export PYTHONPATH=/tmp/modern:$PWD PYTHONUNBUFFERED=1 NO_COLOR=1 NCCL_NVLS_ENABLE=0
run() { echo; echo "\$ $*"; local t=$(date +%s%N); "$@"; local rc=$?; echo "[exit $rc, $(( ($(date +%s%N) - t) / 1000000 )) ms]"; }
nvidia-smi -L
printf 'num_generations: 4\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 2\nbf16: true\n' > /tmp/shape.yaml
printf 'num_generations: 4\nper_device_train_batch_size: 4\nfp16: true\nbf16: false\n' > /tmp/fp16.yaml
printf 'num_generations: 4\nper_device_train_batch_size: 3\n' > /tmp/refused.yaml
echo; echo "=== 1. the config's shape: 8 per rank × 2 accumulation, 4 generations, bf16, 2 ranks"
run python3 -m envdoctor check --probe --no-network --select CFG,LAY,PRB --config /tmp/shape.yaml -- torchrun --nproc_per_node 2 train.py
echo; echo "=== 2. fp16 from the config"
run python3 -m envdoctor probe --config /tmp/fp16.yaml -- torchrun --nproc_per_node 2 train.py
echo; echo "=== 3. a shape TRL refuses: 3 per rank × 2 ranks = 6 prompts, num_generations 4"
run python3 -m envdoctor check --probe --no-network --select CFG,LAY,PRB --config /tmp/refused.yaml -- torchrun --nproc_per_node 2 train.py
echo; echo "=== 4. nothing left on the GPUs"
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
echo; echo "=== 5. GPU tests"
run python3 -m pytest -q -p no:cacheprovider tests/probe/test_probe_gpu.py tests/facts/test_gpu_real.py
