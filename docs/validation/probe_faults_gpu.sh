#!/usr/bin/env bash
# Probe faults on a GPU machine (issue 7; one GPU is enough). Wheels as for probe_gpu.sh (.whl/modern).
set -u
python3 -m pip install -q --no-index --no-deps --no-cache-dir --target /tmp/modern .whl/modern/*.whl || exit 1
export PYTHONPATH=/tmp/modern:$PWD PYTHONUNBUFFERED=1 CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_NVLS_ENABLE=0
nvidia-smi -L
echo "\$ python3 docs/validation/probe_faults_gpu.py"
python3 docs/validation/probe_faults_gpu.py
echo "[exit $?]"
