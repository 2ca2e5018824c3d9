#!/usr/bin/env bash
# Clusters (issue 6) on real GPUs: `envdoctor check --distributed` over NCCL, run by the device
# tool from the repository root on a 2- or 4-GPU machine (its image holds torch, transformers,
# accelerate, click, nvidia-ml-py, PyYAML; TRL 1.16 and datasets travel as wheels in .whl/modern,
# carried with `carry: [".whl"]`, so the package area is what a training node would show):
#
#   bash docs/validation/cluster_gpu.sh 2>&1 | tee $OUT/cluster_gpu.log
#
# 1. one node, N ranks (torchrun): NCCL all-reduce across all GPUs, the rank → GPU table
# 2. the same under accelerate launch -m
# 3. two "nodes" on this host (two torchruns, node ranks 0 and 1, each with half the GPUs via
#    CUDA_VISIBLE_DEVICES), with transformers 4.49.0 planted on node 1: CLU001 names it; the node pair
#    is timed over NCCL (NVLink here, the network on a real cluster). NVML lists every GPU of the
#    host on both "nodes"; each node's ranks sit on their own half.
# 4. Slurm-style per-task visibility: two ranks that see only GPU 0: CLU007 (no cuda:1, two ranks on
#    one GPU) and the benchmark falls back to gloo instead of starting NCCL on a shared GPU
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0) throughout.
set -u
if ls .whl/modern/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/modern/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NO_COLOR=1 NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=4
OUT=${OUT:-/tmp}
run() { echo; echo "\$ $*"; local t=$(date +%s%N); "$@"; local rc=$?; echo "[exit $rc, $(( ($(date +%s%N) - t) / 1000000 )) ms]"; }
TORCHRUN="python3 -m torch.distributed.run"
N=${GPUS:-$(nvidia-smi -L | wc -l)}  # GPUS=2: a dry run of this script on a CPU machine
HALF=$(( N / 2 ))
echo "GPUs: $N"
run nvidia-smi -L
python3 - <<'PY'
import accelerate, torch
nccl = torch.cuda.nccl.version() if torch.cuda.is_available() else None
print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| NCCL", nccl, "| accelerate",
      accelerate.__version__, "| transformers installed:", end=" ")
try:
    import transformers
    print(transformers.__version__)
except ImportError:
    print("no")
PY

echo; echo "=== 1. one node, $N ranks: torchrun --nproc_per_node $N"
run $TORCHRUN --standalone --nproc_per_node "$N" -m envdoctor check --distributed --no-network -v
run $TORCHRUN --standalone --nproc_per_node "$N" -m envdoctor check --distributed --no-network \
  --format json -o "$OUT/cluster-$N-ranks.json"
python3 - "$OUT/cluster-$N-ranks.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["extra"]["cluster"]
print("backend:", c["backend"], "-", c["backend_reason"])
for r in c["ranks"]:
    print("rank", r["rank"], "local", r["local_rank"], r["device"], r["gpu_name"], "uuid", r["gpu_uuid"][:13])
for b in c["bandwidth"]:
    print(b["group"], b["bytes"] >> 20, "MiB", "busbw", b["busbw_gbps"], "GB/s", "correct", b["correct"], b["error"] or "")
print("exit code in the report:", d["summary"]["exit_code"])
PY

echo; echo "=== 2. accelerate launch --multi_gpu --num_processes $N -m envdoctor check --distributed"
run python3 -m accelerate.commands.launch --multi_gpu --num_processes "$N" --num_machines 1 \
  --mixed_precision no --dynamo_backend no --main_process_port 29611 \
  -m envdoctor check --distributed --no-network

echo; echo "=== 3. two 'nodes' on this host, $HALF GPU(s) each; node 1 has transformers 4.49.0 planted"
echo '{"packages": {"transformers": "4.49.0"}}' > /tmp/node1-override.json
node() {  # node_rank, visible GPUs, extra env
  env CUDA_VISIBLE_DEVICES="$2" $3 $TORCHRUN --nnodes 2 --node_rank "$1" --nproc_per_node "$HALF" \
    --master_addr 127.0.0.1 --master_port 29622 -m envdoctor check --distributed --no-network
}
FIRST=$(seq -s, 0 $(( HALF - 1 ))); SECOND=$(seq -s, "$HALF" $(( N - 1 )))
echo "\$ CUDA_VISIBLE_DEVICES=$FIRST torchrun --nnodes 2 --node_rank 0 --nproc_per_node $HALF … &"
echo "\$ CUDA_VISIBLE_DEVICES=$SECOND ENVDOCTOR_FACTS_OVERRIDE=/tmp/node1-override.json torchrun --nnodes 2 --node_rank 1 …"
node 1 "$SECOND" ENVDOCTOR_FACTS_OVERRIDE=/tmp/node1-override.json > /tmp/node1.out 2> /tmp/node1.err &
NODE1=$!
t=$(date +%s%N)
node 0 "$FIRST" ""; rc0=$?
wait $NODE1; rc1=$?
echo "[node 0 exit $rc0, node 1 exit $rc1, $(( ($(date +%s%N) - t) / 1000000 )) ms; node 1 stdout: $(wc -c < /tmp/node1.out) bytes]"
grep -v "^\s*$" /tmp/node1.err | tail -3

echo; echo "=== 4. per-task visibility: 2 ranks, both see only GPU 0"
run env CUDA_VISIBLE_DEVICES=0 $TORCHRUN --standalone --nproc_per_node 2 -m envdoctor check \
  --distributed --no-network

