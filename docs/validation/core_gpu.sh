#!/usr/bin/env bash
# Core (issue 2) on real GPUs: NVML facts, a snapshot, the live check with a stand-in process
# holding the generation GPU, the GPU tests and the speed benchmark. Run by the device tool from
# the repository root with the wheels in .whl/ (click, nvidia-ml-py, PyYAML, packaging, pytest…).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NO_COLOR=1
run() { echo; echo "\$ $*"; "$@"; echo "[exit $?]"; }
run nvidia-smi -L
run python3 -m envdoctor collect -o "${OUT:-/tmp}/facts.json"
python3 - "${OUT:-/tmp}/facts.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("driver", d["driver"], "| gpus:", [(g["index"], g["name"], g["memory_total_mib"],
      g["compute_capability"], g["mig"]) for g in d["gpus"]])
PY
run python3 -m envdoctor check --no-network
# a stand-in for vLLM: a process holding 100 GiB on GPU 1
CUDA_VISIBLE_DEVICES=1 python3 -c "import torch,time; x=torch.empty(100*2**30, dtype=torch.uint8, device='cuda'); print('stand-in holds 100 GiB on GPU 1', flush=True); time.sleep(300)" &
HOLDER=$!
sleep 10
run python3 -m envdoctor check --no-network -v -- python train.py
printf 'use_vllm: true\nvllm_mode: server\nvllm_gpu_memory_utilization: 0.9\nnum_generations: 4\nper_device_train_batch_size: 4\n' > /tmp/grpo.yaml
run python3 -m envdoctor check --no-network --config /tmp/grpo.yaml --launch "CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1 train.py" --launch "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Qwen2.5-7B"
run python3 -m envdoctor check --no-network --config /tmp/grpo.yaml --launch "CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1 train.py" --launch "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Qwen2.5-7B" --format json
run python3 -m pytest -q -p no:cacheprovider tests/facts/test_gpu_real.py
kill $HOLDER; wait $HOLDER 2>/dev/null
run python3 bench/check_speed.py --runs 5
