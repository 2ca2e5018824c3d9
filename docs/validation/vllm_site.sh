# Sourced by the device scripts: vLLM 0.26.0 + TRL 1.16 and what the GPU image lacks, from the
# wheel chunks earlier calls copied to /tmp/parts/part.* (probe_vllm_gpu.sh says how), installed
# once per warm machine into /tmp/vsite.   . docs/validation/vllm_site.sh || exit 1
[ -f /tmp/vsite/.done ] || { mkdir -p /tmp/vw && cat /tmp/parts/part.* | tar -x -C /tmp/vw \
  && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/vsite /tmp/vw/*.whl \
  && touch /tmp/vsite/.done; }
