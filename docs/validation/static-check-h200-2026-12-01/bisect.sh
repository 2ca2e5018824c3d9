unset PYTHONDONTWRITEBYTECODE
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
R=$PWD
for c in 1140b330 ae98f85b 37834add 66fc8b29; do mkdir -p /tmp/t/$c && tar -xzf .slims/$c.tgz -C /tmp/t/$c; done
mkdir -p /tmp/t/head && cp -r envdoctor rules bench pyproject.toml /tmp/t/head/
for round in 1 2; do
  for c in 1140b330 ae98f85b 37834add 66fc8b29 head; do
    echo "== throughput round $round $c"
    (cd /tmp/t/$c && PYTHONPATH=/tmp/t/$c:/tmp/site timeout 100 python3 bench/triage_throughput.py --size-mb 128 --repeat 3 2>&1 | grep -E "8 processes|CLI,|CPU time")
  done
done
