#!/usr/bin/env bash
# The probe inside a multi-node job (issue #38, items 1-2) on a 2-GPU machine (nvidia-h100-x2 or
# nvidia-h200-x2): two "nodes" emulated on one host, two torchrun agents with --nnodes 2,
#   node 0 at 127.0.0.1 on GPU 0, node 1 at 127.0.0.2 on GPU 1 (CUDA_VISIBLE_DEVICES per agent),
# each running `-m envdoctor check --distributed --probe`; rank 0 prints one report with a row
# per node. Run from the repository root by the device tool:
#
#   bash docs/validation/multinode_probe_gpu.sh [none] [colocate] [server] 2>&1 | tee $OUT/multinode_probe_gpu.log
#
# Packages: TRL 1.16 + datasets as wheels in .wt/seventh (device_session_7.sh's, carried) are
# installed into /tmp/site; vLLM 0.26 (colocate, server) from /tmp/vsite when an earlier call on
# the same warm machine unpacked it (/work/shared/knowledge/vllm-on-device.md, the chunk calls).
# Without vLLM only `none` runs.
#   none      use_vllm: false. Expect: 2 of 2 nodes pass; rank 0→cuda:0 on node 0 (GPU 0),
#             rank 1→cuda:0 on node 1 (GPU 1); each rank's world_size 2 (one job, NCCL across the
#             "nodes"); isolation proved per node.
#   colocate  use_vllm: true, vllm_mode: colocate at 0.3, batch 4: TRL's in-process vLLM on every
#             rank of the job; the weight-sync proof on every rank (WEIGHT SYNC "proved").
#   server    vllm_mode: server, vllm_server_host 127.0.0.2: node 1 (GPU 1) is the server node
#             (ENVDOCTOR_NODE_ADDR=127.0.0.2 names it): it runs the probe server (`trl vllm-serve`
#             on the generic model) on 127.0.0.2 while node 0 (GPU 0) is the one training node
#             (torchrun --nnodes 1); the trainer generates through 127.0.0.2:<port> and syncs its
#             weights over NCCL (the group port). Expect: node 0 pass with WEIGHT SYNC "proved";
#             node 1's row "vLLM server :<port> (group port <p>)" pass; nothing left on the GPUs.
#             --probe-timeout 300 here: the server's start took 61-91 s on H100 / H200.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0). Each run is bounded (timeout 420 s): with the
# device tool's 10 minutes a call, give one or two modes per call (e.g. `none colocate`, then
# `server` on the same warm machine). On a CPU machine `none` runs too (GPU001, "not measurable").
set -u
if ls .wt/seventh/*.whl >/dev/null 2>&1 && [ ! -f /tmp/site/.done ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .wt/seventh/*.whl && touch /tmp/site/.done || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
if [ -f /tmp/vsite/.done ]; then
  export PYTHONPATH=/tmp/vsite:$PYTHONPATH PATH=/tmp/vsite/bin:$PATH
fi
export PYTHONUNBUFFERED=1 NO_COLOR=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 OMP_NUM_THREADS=4
OUT=${OUT:-/tmp}
nvidia-smi -L
python3 -c "import importlib.metadata as m
for p in ('torch', 'trl', 'transformers', 'accelerate', 'datasets', 'vllm'):
    try: print(p, m.version(p))
    except m.PackageNotFoundError: print(p, '-')"
HAVE_VLLM=$(python3 -c "import importlib.util as u; print(1 if u.find_spec('vllm') else 0)")
MODES=${*:-none colocate server}

config() {  # the GRPO config of a mode
  case $1 in
    none) printf 'use_vllm: false\n' ;;
    colocate) printf 'use_vllm: true\nvllm_mode: colocate\nvllm_gpu_memory_utilization: 0.3\n' ;;
    server) printf 'use_vllm: true\nvllm_mode: server\nvllm_server_host: 127.0.0.2\nvllm_server_port: 8011\n' ;;
  esac
  printf 'num_generations: 2\nper_device_train_batch_size: 4\nmax_completion_length: 16\nbf16: true\n'
}

for mode in $MODES; do
  if [ "$mode" != none ] && [ "$HAVE_VLLM" != 1 ]; then
    echo; echo "== $mode: skipped (no vLLM here: unpack /tmp/vsite first)"; continue
  fi
  config "$mode" > /tmp/mn-$mode.yaml
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  echo; echo "== $mode"; cat /tmp/mn-$mode.yaml
  t=$(date +%s)
  for n in 0 1; do
    addr=127.0.0.$((n + 1))
    echo "\$ CUDA_VISIBLE_DEVICES=$n ENVDOCTOR_NODE_ADDR=$addr torchrun --nnodes 2 --node_rank $n" \
      "--nproc_per_node 1 --master_addr 127.0.0.1 --master_port $port --local_addr $addr" \
      "-m envdoctor check --distributed --probe --no-network --config mn-$mode.yaml --format json"
    CUDA_VISIBLE_DEVICES=$n ENVDOCTOR_NODE_ADDR=$addr timeout 420 python3 -m torch.distributed.run \
      --nnodes 2 --node_rank $n --nproc_per_node 1 --master_addr 127.0.0.1 --master_port "$port" \
      --local_addr "$addr" -m envdoctor check --distributed --probe --probe-timeout 300 --no-network -v \
      --config /tmp/mn-$mode.yaml --format json > "$OUT/multinode-probe-$mode-node$n.json" \
      2> "$OUT/multinode-probe-$mode-node$n.err" &
    pids[$n]=$!
  done
  wait "${pids[0]}"; c0=$?
  wait "${pids[1]}"; c1=$?
  echo "[exit $c0 / $c1, $(( $(date +%s) - t )) s]"
  python3 - "$OUT/multinode-probe-$mode-node0.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError as exc:
    print("no JSON report from rank 0:", exc)
    sys.exit(0)
area = next((a for a in r["areas"] if a["key"] == "probe"), {})
print("probe:", area.get("summary"))
for t in r.get("extra", {}).get("tables", []):
    if t.get("title") == "Probe per node:":
        print("   ", t["columns"])
        for row in t["rows"]:
            print("   ", row)
for n in (r.get("probe") or {}).get("nodes", []):
    print(" node", n.get("node"), n.get("addr"), n.get("status"), "isolation:", n.get("isolation"),
          "ranks:", {k: (v.get("device"), v.get("world_size"), v.get("step_s")) for k, v in (n.get("ranks") or {}).items()},
          "weight sync:", {k: (n.get("weight_sync") or {}).get(k) for k in ("verdict", "ranks", "reason")})
print("findings (not info):")
for f in r["findings"]:
    if f["severity"] != "info":
        print("  ", f["rule"], f["severity"], f["message"][:300])
PY
  tail -n 5 "$OUT/multinode-probe-$mode-node0.err" "$OUT/multinode-probe-$mode-node1.err"
done
echo; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
