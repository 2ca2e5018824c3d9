#!/usr/bin/env bash
# Trainer startup (issue 6) on real GPUs: EnvDoctorCallback's preflight, its NVML watch during
# training, and the rank-aware path over NCCL. Run by the device tool from the repository root
# on a 2-GPU machine (its image holds torch, transformers, accelerate, click, PyYAML,
# nvidia-ml-py; TRL is not needed).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NO_COLOR=1
S=docs/validation/startup_gpu.py
run() { echo; echo "\$ $*"; "$@"; echo "[exit $?]"; }
run nvidia-smi -L
python3 -c "import torch, transformers, accelerate, pynvml; print('torch', torch.__version__, '| transformers', transformers.__version__, '| accelerate', accelerate.__version__)"
run python3 $S trap
run python3 -m torch.distributed.run --standalone --nproc_per_node 1 $S watch
run python3 -m torch.distributed.run --standalone --nproc_per_node 2 $S ranks
