"""Compare envdoctor's memory plan with what memory_gpu.py measured, shape by shape.

    PYTHONPATH=. python docs/validation/memory_compare.py docs/validation/memory-gpu-h100.jsonl

Predicted "allocated" is the plan's sum of the parts PyTorch allocates (against
torch.cuda.max_memory_allocated); predicted "process" adds the allocator margin and the CUDA
context (against NVML's reading of the process, or of the device less its idle use).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from envdoctor.plan.memory.knobs import from_config as knobs  # noqa: E402
from envdoctor.plan.memory.parts import GiB, allocated, overhead_parts, trainer_parts, vllm_parts  # noqa: E402
from envdoctor.plan.memory.shape import from_config  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_gpu import MODELS  # noqa: E402


def _knobs(row: dict, trl: str):
    config = {"per_device_train_batch_size": row["batch"],
              "max_prompt_length": row.get("prompt_tokens", row["prompt_len"]),
              "max_completion_length": row["completion_len"],
              "gradient_checkpointing": row["gradient_checkpointing"], "bf16": True,
              "num_generations": 4, "model_init_kwargs": {"dtype": row["dtype"]},
              "optim": row.get("optimizer") or "adamw_torch_fused", "beta": row.get("beta", 0.0)}
    if row.get("lora"):
        config.update(use_peft=True, lora_r=row["lora"][0], lora_target_modules=row["lora"][1])
    if row.get("quant") == "4bit":
        config["load_in_4bit"] = True
    if row.get("vllm"):
        config.update(use_vllm=True, vllm_mode="colocate",
                      vllm_gpu_memory_utilization=row["vllm"])
    acc = row.get("accelerate")
    world = int(acc.get("num_processes", 1)) if acc else 1
    return knobs(config, trl, "bfloat16", accelerate=acc, world=world, node_ranks=world,
                 vllm_mode="colocate" if row.get("vllm") else None)


def predict(row: dict, trl: str) -> tuple[int, int]:
    """(PyTorch allocations, the whole process) at the peak; colocate adds vLLM's share."""
    shape = from_config(dict(MODELS[row["model"]]), row["model"])
    k = _knobs(row, trl)
    parts = trainer_parts(shape, k)
    alloc = allocated(parts)
    proc = alloc + sum(p.bytes for p in overhead_parts(parts, k))
    if k.use_vllm and row.get("total_memory"):
        proc += int(k.vllm_util * row["total_memory"])
    return alloc, proc


_VLLM_LOG = {
    "weights": r"Actual usage is ([\d.]+) GiB for weight",
    "activation": r"([\d.]+) GiB for peak activation",
    "non_torch": r"([\d.]+) GiB for non-torch memory",
    "graphs": r"([\d.]+) GiB for CUDAGraph memory",
    "kv": r"Available KV cache memory: ([\d.]+) GiB",
    # vLLM's refusal at start (kv_cache_utils.py): what one max_model_len sequence needs
    "kv_refused": r"larger than the available KV cache memory \(([\d.]+) GiB\)",
    "need": r"\(([\d.]+) GiB KV cache is needed",
}


def vllm_log(path: Path) -> dict[str, float]:
    """vLLM's own account of its memory (gpu_worker.py's startup lines), in GiB."""
    text = path.read_text(errors="replace") if path.exists() else ""
    found = {}
    for key, pattern in _VLLM_LOG.items():
        m = re.search(pattern, text)
        if m:
            found[key] = float(m.group(1))
    m = re.search(r"GPU KV cache size: ([\d,]+) tokens", text)
    if m:
        found["kv_tokens"] = float(m.group(1).replace(",", ""))
    return found


def vllm_rows(rows: list[dict], trl: str, jsonl: Path) -> None:
    """The generation side part by part: the plan's vLLM parts against vLLM's own startup log
    (server rows: vLLM alone; colocate rows: the vLLM inside the trainer)."""
    print("\n| shape | model | vLLM | max_model_len | part | predicted | vLLM's log | error |")
    print("|" + "---|" * 8)
    for r in rows:
        mml_cfg = r.get("max_model_len") or 32768
        shape = from_config(dict(MODELS[r["model"]], max_position_embeddings=mml_cfg), r["model"])
        if r.get("server"):
            util, setup = r["vllm_util"], f"server {r['vllm_util']}"
            k = knobs({"use_vllm": True, "vllm_gpu_memory_utilization": util}, trl, "bfloat16",
                      vllm_mode="server")
        else:
            util, setup, k = r["vllm"], f"colocate {r['vllm']}", _knobs(r, trl)
        if r.get("enforce_eager"):
            k = k.replace(vllm_enforce_eager=True)
        parts, need, free = vllm_parts(shape, k, r.get("total_memory"), mml_cfg)
        seen = vllm_log(jsonl.with_name(f"{jsonl.stem}-{r['shape']}.log"))
        measured = {"vLLM weights": seen.get("weights"),
                    "vLLM activations + CUDA graphs": sum(seen.get(x, 0.0) for x in (
                        "activation", "non_torch", "graphs")) if "weights" in seen else None,
                    "vLLM KV cache": seen.get("kv", seen.get("kv_refused"))}
        for part in parts:
            got = measured.get(part.name)
            err = f"{(part.bytes / GiB - got) / got:+.0%}" if got else "—"
            print(f"| {r['shape']} | {r['model']} | {setup} | {mml_cfg} | {part.name} | "
                  f"{part.bytes / GiB:.2f} GiB | {f'{got:.2f} GiB' if got is not None else '—'} "
                  f"| {err} |")
        verdict = "refuses (MEM103)" if need and free is not None and need > free else "starts"
        said = f"needs {seen['need']:.2f} GiB: refused" if "need" in seen else \
            "started" if "kv" in seen else r["status"]
        print(f"| {r['shape']} | | | | one {mml_cfg}-token sequence | needs {need / GiB:.2f} GiB:"
              f" predicted {verdict} | {said} | |")


def slack_rows(rows: list[dict], trl: str) -> None:
    """The caching allocator's slack per optimizer step (what it reserves beyond its peak
    allocation, as a share of that peak) against the plan's fragmentation share."""
    stepped = [r for r in rows if r.get("steps") and r.get("status") == "ok"]
    if not stepped:
        return
    print("\n| shape | model | step | peak allocated | peak reserved | slack | plan's share |")
    print("|" + "---|" * 7)
    for r in stepped:
        share = next((p for p in overhead_parts(trainer_parts(
            from_config(dict(MODELS[r["model"]]), r["model"]), _knobs(r, trl)), _knobs(r, trl))
            if p.name == "allocator fragmentation"), None)
        alloc = allocated(trainer_parts(from_config(dict(MODELS[r["model"]]), r["model"]),
                                        _knobs(r, trl)))
        plan = f"{share.bytes / alloc:.0%}" if share and alloc else "—"
        for s in r["steps"]:
            peak, res = s["max_allocated"], s["max_reserved"]
            print(f"| {r['shape']} | {r['model']} | {s['step']} | {peak / GiB:.2f} GiB | "
                  f"{res / GiB:.2f} GiB | {(res - peak) / peak:+.0%} | {plan} |")


def main() -> None:
    jsonl = Path(sys.argv[1])
    lines = [json.loads(x) for f in [jsonl, *sorted(jsonl.parent.glob(jsonl.name + ".rank*"))]
             for x in f.read_text().splitlines() if x.strip()]
    head = lines[0]
    rows = [x for x in lines if "shape" in x and not x.get("server")]
    servers = [x for x in lines if x.get("server")]
    trl = head["versions"]["trl"]
    print(f"GPU {head['gpu']}; torch {head['versions']['torch']}, transformers "
          f"{head['versions']['transformers']}, TRL {trl}\n")
    print("| shape | model | setup | batch × (prompt + completion) | GC | weights | predicted alloc "
          "| measured alloc | error | predicted process | measured NVML | error | status |")
    print("|" + "---|" * 13)
    for r in rows:
        idle = r.get("device_used_before", head.get("device_used_before", 0))
        alloc, proc = predict(r, trl)
        meas = r.get("max_allocated")
        nv = r.get("nvml_process_peak") or max(r.get("nvml_device_peak", 0) - idle, 0)
        err = f"{(alloc - meas) / meas:+.0%}" if meas and r["status"] == "ok" \
            and not r.get("vllm") else "—"
        nerr = f"{(proc - nv) / nv:+.0%}" if nv and r["status"] == "ok" else "—"
        cap = r.get("total_memory")
        status = r["status"]
        if status in ("oom", "error") or (cap and proc > cap):
            status += f" (predicted {'OOM' if cap and proc > cap else 'fits'})"
        model = r["model"] + (f" + LoRA r={r['lora'][0]} {'+'.join(r['lora'][1])}"
                              if r.get("lora") else "")
        setup = ", ".join(x for x in (
            r.get("launch") and f"{r['launch'].upper()} rank {r.get('rank', 0)} of 2",
            r.get("quant") and "4-bit base", r.get("vllm") and f"vLLM colocate {r['vllm']}",
            r.get("beta") and f"beta {r['beta']}",
            r.get("optimizer") if "8bit" in str(r.get("optimizer")) else None) if x) or "1 rank"
        print(f"| {r['shape']} | {model} | {setup} | {r['batch']} × ({r.get('prompt_tokens')} + "
              f"{r['completion_len']}) | {'on' if r['gradient_checkpointing'] else 'off'} | "
              f"{r['dtype']} | {alloc / GiB:.2f} GiB | "
              f"{meas / GiB if meas else 0:.2f} GiB | {err} | {proc / GiB:.2f} GiB | "
              f"{nv / GiB:.2f} GiB | {nerr} | {status} |")
    slack_rows(rows, trl)
    colocated = [x for x in rows if x.get("vllm") and x.get("status") == "ok"]
    if servers or colocated:
        vllm_rows(colocated + servers, trl, jsonl)


if __name__ == "__main__":
    main()
