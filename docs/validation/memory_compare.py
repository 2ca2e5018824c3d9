"""Compare envdoctor's memory plan with what memory_gpu.py measured, shape by shape.

    PYTHONPATH=. python docs/validation/memory_compare.py docs/validation/memory-gpu-h100.jsonl

Predicted "allocated" is the plan's sum of the parts PyTorch allocates (against
torch.cuda.max_memory_allocated); predicted "process" adds the allocator margin and the CUDA
context (against NVML's reading of the process, or of the device less its idle use).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from envdoctor.plan.memory import GiB, allocated, overhead_parts, trainer_parts  # noqa: E402
from envdoctor.plan.memory_setup import from_config as knobs  # noqa: E402
from envdoctor.plan.model_shape import from_config  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_gpu import MODELS  # noqa: E402


def predict(row: dict, trl: str) -> tuple[int, int]:
    shape = from_config(dict(MODELS[row["model"]]), row["model"])
    config = {"per_device_train_batch_size": row["batch"],
              "max_prompt_length": row.get("prompt_tokens", row["prompt_len"]),
              "max_completion_length": row["completion_len"],
              "gradient_checkpointing": row["gradient_checkpointing"], "bf16": True,
              "num_generations": 4, "model_init_kwargs": {"dtype": row["dtype"]},
              "optim": row.get("optimizer", "adamw_torch_fused")}
    if row.get("lora"):
        config.update(use_peft=True, lora_r=row["lora"][0], lora_target_modules=row["lora"][1])
    parts = trainer_parts(shape, knobs(config, trl, "bfloat16"))
    alloc = allocated(parts)
    return alloc, alloc + sum(p.bytes for p in overhead_parts(parts))


def main() -> None:
    lines = [json.loads(x) for x in Path(sys.argv[1]).read_text().splitlines() if x.strip()]
    head, rows = lines[0], lines[1:]
    trl = head["versions"]["trl"]
    idle = head.get("device_used_before", 0)
    print(f"GPU {head['gpu']}; torch {head['versions']['torch']}, transformers "
          f"{head['versions']['transformers']}, TRL {trl}\n")
    print("| shape | model | batch × (prompt + completion) | GC | weights | predicted alloc "
          "| measured alloc | error | predicted process | measured NVML | error | status |")
    print("|" + "---|" * 12)
    for r in rows:
        alloc, proc = predict(r, trl)
        meas = r.get("max_allocated")
        nv = r.get("nvml_process_peak") or max(r.get("nvml_device_peak", 0) - idle, 0)
        err = f"{(alloc - meas) / meas:+.0%}" if meas and r["status"] == "ok" else "—"
        nerr = f"{(proc - nv) / nv:+.0%}" if nv and r["status"] == "ok" else "—"
        cap = r.get("total_memory")
        status = r["status"]
        if status == "oom" or (cap and proc > cap):
            status += f" (predicted {'OOM' if cap and proc > cap else 'fits'})"
        model = r["model"] + (f" + LoRA r={r['lora'][0]} {'+'.join(r['lora'][1])}" if r.get("lora") else "")
        print(f"| {r['shape']} | {model} | {r['batch']} × ({r.get('prompt_tokens')} + "
              f"{r['completion_len']}) | {'on' if r['gradient_checkpointing'] else 'off'} | "
              f"{r['dtype']} | {alloc / GiB:.2f} GiB | "
              f"{meas / GiB if meas else 0:.2f} GiB | {err} | {proc / GiB:.2f} GiB | "
              f"{nv / GiB:.2f} GiB | {nerr} | {status} |")


if __name__ == "__main__":
    main()
