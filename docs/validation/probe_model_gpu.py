"""The probe with the user's model shape, TRL's vLLM settings and the weight-sync proof (issue 25).

    python3 docs/validation/probe_model_gpu.py colocate:generic:1 colocate:qwen25:8 noop:qwen25 …

Each scenario writes a config (and, for a shaped model, a local model directory holding only the
published config.json: nothing is downloaded), builds the plan exactly as `envdoctor check
--probe --config C -- LAUNCH` does, runs the probe and prints its status, the model it ran, the
vLLM engine TRL started, the weight-sync proof, the findings and the phases. The full report area
goes to $OUT/<kind>_<model>_<batch>.json when OUT is set. A scenario is KIND:MODEL[:BATCH]
(per-device batch, default 8 = TRL's default; PROBE_GPU picks the trainer's GPU of the
one-GPU kinds, so several run side by side); MODEL is generic (no model named: the generic tiny
model) or qwen25 / qwen3 / llama / qwen25_7b (the published config.json of Qwen2.5-0.5B-Instruct
/ Qwen3-0.6B / Llama-3.2-1B / Qwen2.5-7B-Instruct). KIND:

- colocate: vllm_mode colocate at 0.3
- noop / wrong: the same with the weight sync sabotaged (a sync that does nothing; vLLM holding
  other tensors than the trainer) — must be a PRB019 error
- sleep: colocate with vllm_enable_sleep_mode
- server / server_noop: trainer on GPU 0, `trl vllm-serve` on GPU 1 (two GPUs)
- lora / lora_skip: colocate with `use_peft` (TRL's LoRA defaults, r 16); lora_skip sabotages
  the merge (TRL's sync sends the base weights without the adapters) — must be a PRB019 error
- vserve: the server split with a `vllm serve` line (vLLM's own CLI, the flags TRL 1.16's
  `trl vllm-serve` adds) instead of `trl vllm-serve`
- tp2x2: two trainer ranks (`accelerate launch --num_processes 2`) on GPUs 0-1, `trl vllm-serve
  --tensor_parallel_size 2` on GPUs 2-3 (four GPUs)
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import envdoctor.probe.plan.spec as probe_plan
from envdoctor.checks.context import Context
from envdoctor.commands.probe import probe_area
from envdoctor.facts.collect import collect_facts
from envdoctor.plan.build import build_plan

QWEN25_05B = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}
QWEN25_7B = {**QWEN25_05B, "hidden_size": 3584, "intermediate_size": 18944,
             "max_window_layers": 28, "num_attention_heads": 28, "num_hidden_layers": 28,
             "num_key_value_heads": 4, "sliding_window": 131072, "tie_word_embeddings": False,
             "vocab_size": 152064}
QWEN3_06B = {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936}
LLAMA32_1B = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
    "vocab_size": 128256}
MODELS = {"qwen25": QWEN25_05B, "qwen3": QWEN3_06B, "llama": LLAMA32_1B, "qwen25_7b": QWEN25_7B}
TIMEOUT = 400.0


def _model_dir(work: Path, key: str) -> str:
    folder = work / f"user-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(MODELS[key]))
    return str(folder)


def _scenario(name: str, work: Path) -> tuple[dict, list[str], str | None]:
    kind, model, batch = (name.split(":") + ["8"])[:3] if name.count(":") >= 1 else (name, "", "8")
    config: dict = {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3,
                    "per_device_train_batch_size": int(batch), "num_generations": 2}
    if model != "generic":
        config["model_name_or_path"] = _model_dir(work, model)
    if kind == "sleep":
        config["vllm_enable_sleep_mode"] = True
    if kind.startswith("lora"):
        config["use_peft"] = True
    launches = [f"CUDA_VISIBLE_DEVICES={os.environ.get('PROBE_GPU', '0')} python3 train.py"]
    if kind == "tp2x2":
        config.update(vllm_mode="server")
        config.pop("vllm_gpu_memory_utilization")
        target = config.get("model_name_or_path") or "Qwen/Qwen2.5-0.5B-Instruct"
        launches = [f"CUDA_VISIBLE_DEVICES=2,3 trl vllm-serve --model {target} "
                    "--tensor_parallel_size 2 --gpu_memory_utilization 0.3",
                    "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py"]
    if kind == "vserve":  # vLLM's own CLI with the flags `trl vllm-serve` adds (TRL 1.16)
        config.update(vllm_mode="server")
        config.pop("vllm_gpu_memory_utilization")
        target = config.get("model_name_or_path") or "Qwen/Qwen2.5-0.5B-Instruct"
        launches.insert(0, "VLLM_SERVER_DEV_MODE=1 CUDA_VISIBLE_DEVICES=1 vllm serve "
                           f"{target} --gpu-memory-utilization 0.3 --weight-transfer-config "
                           "'{\"backend\": \"nccl\"}' --logprobs-mode processed_logprobs "
                           "--max-logprobs -1")
    if kind.startswith("server"):
        config.update(vllm_mode="server")
        config.pop("vllm_gpu_memory_utilization")
        target = config.get("model_name_or_path") or "Qwen/Qwen2.5-0.5B-Instruct"
        launches.insert(0, f"CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model {target} "
                           "--gpu_memory_utilization 0.3")
    fault = {"noop": "sync_noop", "wrong": "sync_wrong", "server_noop": "sync_noop",
             "lora_skip": "skip_merge"}.get(kind)
    return config, launches, fault


def run(name: str, work: Path) -> None:
    config, launches, fault = _scenario(name, work)
    path = work / f"{name}.json"
    path.write_text(json.dumps(config))
    real = probe_plan.spec_from_context

    def with_fault(ctx, **kwargs):
        spec = real(ctx, **kwargs)
        spec.fault = fault
        return spec

    probe_plan.spec_from_context = with_fault
    try:
        plan = build_plan(config=str(path), launch="\n".join(launches), live=True)
        ctx = Context(facts=collect_facts(), plan=plan)
        t0 = time.monotonic()
        area = probe_area(ctx, timeout=TIMEOUT)
    finally:
        probe_plan.spec_from_context = real
    data = area.data
    print(f"\n=== {name}: config {json.dumps({k: v for k, v in config.items()})}"
          + (f" (sabotage: {fault})" if fault else ""))
    for line in launches:
        print(f"    launch: {line}")
    print(f"    status {data.get('status')}, wall {time.monotonic() - t0:.1f} s")
    model = data.get("model", {})
    print("    model: " + json.dumps({k: model.get(k) for k in (
        "ran", "architecture", "hidden_size", "num_attention_heads", "kv_heads", "head_dim",
        "vocab_size", "max_position_embeddings", "layers", "user_layers", "deviations")}))
    if model.get("writer"):
        print(f"    writer: {json.dumps(model['writer'])}")
    print(f"    vllm: {json.dumps(data.get('vllm'))}")
    print(f"    weight_sync: {json.dumps(data.get('weight_sync'))}")
    for f in area.findings:
        print(f"    {f.severity.name:<7} {f.rule}: {f.message[:600]}")
    print(f"    summary: {area.summary[:1500]}")
    out = os.environ.get("OUT")
    if out:
        Path(out, name.replace(":", "_") + ".json").write_text(json.dumps(
            {"data": data, "summary": area.summary,
             "findings": [f.to_dict() for f in area.findings]}, indent=1, default=str))


def _keep_logs() -> None:
    """KEEP_LOGS=1 with OUT set: each scenario's trainer, server and writer logs go to $OUT
    (copied just before the probe's temp dir is removed), for a timeline of its phases."""
    import envdoctor.probe.run.runner as runner

    real = runner._collect
    counter = iter(range(1000))

    def collect(tmp, result):
        n = next(counter)
        for log in ("probe.log", "server.log", "writer.log", "vllm-warm.json", "vllm-warm.log"):
            with contextlib.suppress(OSError):
                Path(os.environ["OUT"], f"run{n}-{log}").write_bytes((tmp / log).read_bytes())
        return real(tmp, result)

    runner._collect = collect


def main() -> int:
    if os.environ.get("KEEP_LOGS") and os.environ.get("OUT"):
        _keep_logs()
    work = Path(tempfile.mkdtemp(prefix="probe-model-gpu-"))
    for name in sys.argv[1:]:
        try:
            run(name, work)
        except Exception as exc:  # one scenario's failure does not stop the rest
            print(f"\n=== {name}: the script failed: {type(exc).__name__}: {exc}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
