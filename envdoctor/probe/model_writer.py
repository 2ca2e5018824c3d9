"""Write the shape-faithful probe model: random weights for the user's architecture.

Started by the runner as ``python model_writer.py SPEC.json`` under the training environment's
interpreter (it needs torch and transformers; envdoctor's own process never imports them). The
spec names the output folder, which already holds the reduced ``config.json`` and the tokenizer.
The model is built by transformers from that config (the architecture class it names, else
``AutoModelForCausalLM``), initialised with the family's own random init in its dtype, and saved
as safetensors. Writes ``writer.json`` (parameters, class, seconds) or an ``error`` there.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback

for _key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_key] = "1"  # nothing is ever downloaded


def _dtype(torch, config):
    name = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    text = str(name).replace("torch.", "") if name is not None else "bfloat16"
    if text in ("float16", "bfloat16", "float32"):
        return getattr(torch, text)
    return torch.bfloat16


def _no_init():
    """transformers' own switch that skips its (slow, per-module) random init; the weights are
    then drawn in one pass by ``_fill``."""
    for where in ("transformers.initialization", "transformers.modeling_utils"):
        try:
            module = __import__(where, fromlist=["no_init_weights"])
            return module.no_init_weights()
        except (ImportError, AttributeError):
            continue
    return contextlib.nullcontext()


def _fill(torch, model, std: float) -> None:
    """Random weights as the families' own init draws them, in one pass: normal(0, std) for
    matrices and embeddings, ones for norm weights, zeros for biases and other vectors."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, std)
            elif "norm" in name.lower() and name.endswith("weight"):
                p.fill_(1.0)
            else:
                p.zero_()
    if hasattr(model, "tie_weights"):
        model.tie_weights()


def write(folder: str, seed: int = 0) -> dict:
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.AutoConfig.from_pretrained(folder)
    dtype = _dtype(torch, config)
    arch = (getattr(config, "architectures", None) or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    start = time.perf_counter()
    build = (
        cls._from_config
        if cls is not None and hasattr(cls, "_from_config")
        else transformers.AutoModelForCausalLM.from_config
    )
    skip = _no_init()
    with skip:
        try:
            model = build(config, dtype=dtype)  # transformers 5
        except TypeError:
            model = build(config, torch_dtype=dtype)  # transformers 4
    if not isinstance(skip, contextlib.nullcontext):
        _fill(torch, model, float(getattr(config, "initializer_range", 0.02) or 0.02))
    model.save_pretrained(folder, safe_serialization=True)
    return {
        "class": type(model).__name__,
        "dtype": str(dtype).replace("torch.", ""),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds": round(time.perf_counter() - start, 3),
    }


def main() -> int:
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    out = os.path.join(spec["folder"], "writer.json")
    try:
        result = {"ok": True, **write(spec["folder"], int(spec.get("seed", 0)))}
    except BaseException as exc:  # the runner reports it, naming the model
        result = {
            "ok": False,
            "error": {
                "type": type(exc).__name__,
                "message": str(exc)[:2000],
                "traceback": traceback.format_exc()[-4000:],
            },
        }
    with open(out, "w") as fh:
        json.dump(result, fh)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
