unset PYTHONDONTWRITEBYTECODE
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
R=$PWD; mkdir -p /tmp/e
uptime; nproc
for round in 1 2; do
  for t in final base; do
    T=$R; [ $t = base ] && T=$R/.baseslim
    echo "== round $round $t: empty dir"
    (cd /tmp/e && PYTHONPATH=$T:/tmp/site python3 $T/bench/check_speed.py --runs 10 --only "envdoctor check" 2>&1 | sed -n 2p)
    echo "== round $round $t: its own repository root"
    (cd $T && PYTHONPATH=$T:/tmp/site python3 bench/check_speed.py --runs 10 --only "envdoctor check" 2>&1 | sed -n 2p)
  done
done
for round in 1 2; do
  for t in final base; do
    T=$R; [ $t = base ] && T=$R/.baseslim
    echo "== throughput round $round $t"
    (cd $T && PYTHONPATH=$T:/tmp/site timeout 150 python3 bench/triage_throughput.py --size-mb 128 --repeat 3 2>&1 | grep -E "process|prefilter|CLI|CPU time")
  done
done
