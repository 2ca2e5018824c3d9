#!/usr/bin/env bash
# The probe's vLLM paths on one GPU (issue 14). vLLM 0.26.0 + TRL 1.16 travel as wheel chunks
# (tools: vllm-wheels.sh; /tmp/parts/part.* already copied by earlier calls on the same machine).
#   bash docs/validation/probe_vllm_gpu.sh colocate colocate_greedy taken
#   bash docs/validation/probe_vllm_gpu.sh server beside
#   SERVER_GPU=1 bash docs/validation/probe_vllm_gpu.sh server taken beside   (two GPUs: the split)
set -u
. "$(dirname "$0")/vllm_site.sh" || exit 1
CODE=${CODE:-$PWD}
export PYTHONPATH=/tmp/vsite:$CODE PATH=/tmp/vsite/bin:$PATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi -L
python3 -c "import importlib.metadata as m; print({p: m.version(p) for p in ('torch','vllm','trl','transformers','flashinfer-python')})"
echo "\$ python3 docs/validation/probe_vllm_gpu.py $*"
python3 "$CODE/docs/validation/probe_vllm_gpu.py" "$@"
echo "[exit $?]"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
