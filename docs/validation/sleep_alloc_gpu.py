"""vLLM sleep mode with expandable segments on a real GPU (PKG007's sleep-mode entries).

    python3 docs/validation/sleep_alloc_gpu.py            # every variant, each in its own process

vLLM's sleep mode puts its weights and KV cache in a CuMemAllocator pool. rules/knowledge/vllm.yaml
(`sleep_mode_expandable_segments`) says, from each release's source, that vLLM < 0.20.1 asserts
when PYTORCH_CUDA_ALLOC_CONF holds expandable_segments:True, and that before 0.31 it does not read
PYTORCH_ALLOC_CONF (torch >= 2.9's name) at all. What happens then was not measured. Each variant
builds vLLM as TRL's colocate mode does (in-process, ``distributed_executor_backend=
"external_launcher"``, ``enable_sleep_mode=True``), generates, sleeps (level 1: weights to the CPU,
KV cache dropped), allocates and frees training-like tensors with torch's own allocator, wakes up,
generates again and compares the greedy outputs with the first ones. One JSON line per variant.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

VARIANTS = {
    "none": {},
    "PYTORCH_CUDA_ALLOC_CONF": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "PYTORCH_ALLOC_CONF": {"PYTORCH_ALLOC_CONF": "expandable_segments:True"},
}


def child(model: str) -> dict:
    import torch
    from vllm import LLM, SamplingParams

    out: dict = {"torch_allocator": torch.cuda.memory.get_allocator_backend()}
    llm = LLM(
        model=model,
        enable_sleep_mode=True,
        gpu_memory_utilization=0.3,
        enforce_eager=True,
        max_model_len=256,
        max_num_seqs=16,
        distributed_executor_backend="external_launcher",
        seed=0,
    )
    params = SamplingParams(temperature=0.0, max_tokens=16)
    prompts = ["hello world", "the quick brown fox", "one two three"] * 4
    first = [o.outputs[0].token_ids for o in llm.generate(prompts, params)]
    free0 = torch.cuda.mem_get_info()[0]
    llm.sleep(level=1)
    free_asleep = torch.cuda.mem_get_info()[0]
    # the trainer's step between generations: varied sizes through torch's caching allocator
    for n in (1 << 20, 3 << 20, 7 << 20, 2 << 20, 5 << 20):
        w = torch.randn(n, device="cuda", requires_grad=True)
        (w * w).sum().backward()
        del w
    torch.cuda.synchronize()
    llm.wake_up()
    second = [o.outputs[0].token_ids for o in llm.generate(prompts, params)]
    out.update(
        freed_by_sleep_gib=round((free_asleep - free0) / 2**30, 2),
        same_outputs_after_wake=first == second,
        expandable_segments_seen=any(s.get("is_expandable") for s in torch.cuda.memory_snapshot()),
    )
    return out


def main() -> int:
    from envdoctor.probe.plan.tinymodel import write_tiny_model

    model = tempfile.mkdtemp(prefix="sleep-alloc-")
    write_tiny_model(model)
    for name, extra in VARIANTS.items():
        env = {
            k: v for k, v in os.environ.items() if k not in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
        }
        env.update(extra)
        env.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
        t0 = time.monotonic()
        try:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", model],
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
            )
            rc, text = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, text = 124, f"timeout: {exc}"
        result = next((line for line in text.splitlines() if line.startswith('{"child"')), None)
        row = {"variant": name, "env": extra, "rc": rc, "wall_s": round(time.monotonic() - t0, 1)}
        row["result"] = json.loads(result)["child"] if result else None
        if rc != 0 or not result:
            row["tail"] = [line for line in text.splitlines() if line.strip()][-12:]
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps({"child": child(sys.argv[2])}), flush=True)
        sys.exit(0)
    sys.exit(main())
