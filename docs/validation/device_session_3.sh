#!/usr/bin/env bash
# The third device session, on nvidia-h200-x2 (two H200s): one call per PART after the five
# wheel-chunk calls (probe_vllm_gpu.sh says how /tmp/parts/part.* get there).
#   bash docs/validation/device_session_3.sh probe-server    # issue 14: the 2-GPU server split
#   bash docs/validation/device_session_3.sh probe-colocate  # issue 14 colocate; issue 18 class 5
#   bash docs/validation/device_session_3.sh memory-dist     # issue 16: DDP and FSDP on 2 ranks
#   bash docs/validation/device_session_3.sh memory-single   # issue 16: vLLM parts, 8-bit, QLoRA
#   bash docs/validation/device_session_3.sh memory-next     # issue 16, next session: s9n, c2, TRL 1.14
#   bash docs/validation/device_session_3.sh memory-vllm     # issue 16, next session: v1, v2 (vLLM alone)
#   bash docs/validation/device_session_3.sh memory-zero     # issue 16, next session: ZeRO-2 / -3
# memory-single carries bitsandbytes' wheel (.wt/bnb/*.whl: pip download bitsandbytes==0.50.2);
# memory-zero carries .wt/ds/*.whl (DS_BUILD_OPS=0 pip wheel --no-deps deepspeed==0.19.8;
# pip download --no-deps hjson); memory-next carries .wt/trl114 (pip download --no-deps trl==1.14.0).
set -u
. "$(dirname "$0")/vllm_site.sh" || exit 1
export PYTHONPATH=/tmp/vsite:$PWD PATH=/tmp/vsite/bin:$PATH PYTHONUNBUFFERED=1
# this machine kind keeps NVLink multicast off (KINDS.md): kept in every child's environment
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
python3 -c "import importlib.metadata as m; print({p: m.version(p) for p in ('torch','vllm','trl','transformers','accelerate','peft')})"
M=docs/validation/memory_gpu.py
J=$OUT/memory-gpu-h200x2.jsonl
case "$1" in
probe-server)
  echo "\$ SERVER_GPU=1 python3 docs/validation/probe_vllm_gpu.py server taken beside"
  SERVER_GPU=1 timeout 570 python3 docs/validation/probe_vllm_gpu.py server taken beside
  echo "[exit $?]" ;;
probe-colocate)
  echo "\$ python3 docs/validation/probe_vllm_gpu.py colocate colocate_greedy"
  timeout 300 python3 docs/validation/probe_vllm_gpu.py colocate colocate_greedy
  echo "[exit $?]"
  echo "\$ python3 docs/validation/grpo_log_gpu.py oom 0.6 > \$OUT/grpo-colocate-oom-h200.log 2>&1"
  timeout 240 python3 docs/validation/grpo_log_gpu.py oom 0.6 > "$OUT/grpo-colocate-oom-h200.log" 2>&1
  echo "[exit $?]"; grep -n "OutOfMemoryError\|CUDA out of memory" "$OUT/grpo-colocate-oom-h200.log" | cut -c1-600 ;;
memory-dist)
  python3 $M --accelerate-config ddp > /tmp/ddp.json; python3 $M --accelerate-config fsdp > /tmp/fsdp.json
  for s in d1:ddp d2:fsdp d3:fsdp; do
    echo "\$ accelerate launch --config_file ${s#*:}.json docs/validation/memory_gpu.py \$OUT/memory-gpu-h200x2.jsonl ${s%:*}"
    timeout 200 accelerate launch --config_file /tmp/${s#*:}.json $M "$J" "${s%:*}" > "$OUT/memory-${s%:*}.log" 2>&1
    echo "[exit $?]"; grep '^{"shape"' "$OUT/memory-${s%:*}.log" | cut -c1-400
  done ;;
memory-single)
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/bsite .wt/bnb/*.whl
  export PYTHONPATH=$PYTHONPATH:/tmp/bsite
  # two queues, one GPU each (NVML is read per physical GPU)
  echo "\$ CUDA_VISIBLE_DEVICES=0 python3 docs/validation/grpo_log_gpu.py oom 0.85 > \$OUT/grpo-colocate-oom-h200.log 2>&1"
  echo "\$ CUDA_VISIBLE_DEVICES=0 python3 $M \$OUT/memory-gpu-h200x2.jsonl c1 ; … o1 ; … v1"
  echo "\$ CUDA_VISIBLE_DEVICES=1 python3 $M \$OUT/memory-gpu-h200x2-g1.jsonl v2 ; … v3 ; … q1"
  ( CUDA_VISIBLE_DEVICES=0 timeout 150 python3 docs/validation/grpo_log_gpu.py oom 0.85 > "$OUT/grpo-colocate-oom-h200.log" 2>&1; echo "[oom exit $?]"
    for s in c1 o1 v1; do CUDA_VISIBLE_DEVICES=0 timeout 150 python3 $M "$J" $s > "$OUT/memory-gpu-h200x2-$s.log" 2>&1; echo "[$s exit $?]"; done ) &
  ( for s in v2 v3 q1; do CUDA_VISIBLE_DEVICES=1 timeout 170 python3 $M "${J%.jsonl}-g1.jsonl" $s > "$OUT/memory-gpu-h200x2-g1-$s.log" 2>&1; echo "[$s exit $?]"; done ) &
  wait
  grep -h '^{"shape"' "$OUT"/memory-gpu-h200x2*-?[0-9].log | cut -c1-400 ;;
memory-zero)  # the next session: ZeRO-2 / ZeRO-3 on 2 ranks (carries .wt/ds: deepspeed, hjson)
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/dsite .wt/ds/*.whl
  export PYTHONPATH=$PYTHONPATH:/tmp/dsite
  for s in z2:zero2 z3:zero3; do
    python3 $M --accelerate-config ${s#*:} > /tmp/${s#*:}.json
    echo "\$ accelerate launch --config_file ${s#*:}.json docs/validation/memory_gpu.py \$OUT/memory-gpu-h200x2.jsonl ${s%:*}"
    timeout 250 accelerate launch --config_file /tmp/${s#*:}.json $M "$J" "${s%:*}" > "$OUT/memory-${s%:*}.log" 2>&1
    echo "[exit $?]"; grep '^{"shape"' "$OUT/memory-${s%:*}.log" | cut -c1-400
  done ;;
memory-next)  # the next session: see memory-predicted-before-run.md, last sections
  # GPU 0: s9n, then s5 and s9n again with TRL 1.14 (carried .wt/trl114: its materialized logits)
  # GPU 1: c2. Every shape records the peaks inside and outside generation apart.
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tsite .wt/trl114/*.whl
  echo "\$ CUDA_VISIBLE_DEVICES=0 python3 $M \$OUT/memory-gpu-h200x2.jsonl s9n"
  echo "\$ CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/tsite:\$PYTHONPATH python3 $M \$OUT/memory-gpu-h200x2-trl114.jsonl s5 s9n"
  echo "\$ VLLM_LOGGING_LEVEL=INFO CUDA_VISIBLE_DEVICES=1 python3 $M \$OUT/memory-gpu-h200x2-g1.jsonl c2"
  ( CUDA_VISIBLE_DEVICES=0 timeout 230 python3 $M "$J" s9n > "$OUT/memory-gpu-h200x2-s9n.log" 2>&1; echo "[s9n exit $?]"
    CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/tsite:$PYTHONPATH timeout 250 python3 $M "${J%.jsonl}-trl114.jsonl" s5 s9n \
      > "$OUT/memory-gpu-h200x2-trl114.log" 2>&1; echo "[trl114 exit $?]" ) &
  ( VLLM_LOGGING_LEVEL=INFO CUDA_VISIBLE_DEVICES=1 timeout 300 python3 $M "${J%.jsonl}-g1.jsonl" c2 > "$OUT/memory-gpu-h200x2-g1-c2.log" 2>&1; echo "[c2 exit $?]" ) &
  wait
  grep -h '^{"shape"' "$OUT"/memory-gpu-h200x2-*.log | cut -c1-500 ;;
memory-vllm)  # vLLM alone, one shape per GPU (CUDA stays uninitialized in the parent)
  ( VLLM_LOGGING_LEVEL=INFO CUDA_VISIBLE_DEVICES=0 timeout 200 python3 $M "${J%.jsonl}-v.jsonl" v1 > "$OUT/memory-gpu-h200x2-v-v1.log" 2>&1; echo "[v1 exit $?]" ) &
  ( VLLM_LOGGING_LEVEL=INFO CUDA_VISIBLE_DEVICES=1 timeout 200 python3 $M "${J%.jsonl}-v2.jsonl" v2 > "$OUT/memory-gpu-h200x2-v-v2.log" 2>&1; echo "[v2 exit $?]" ) &
  wait
  grep -h '^{"shape"' "$OUT"/memory-gpu-h200x2-v-*.log | cut -c1-500 ;;
esac
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
