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


#: random values drawn once and copied into every matrix from a random offset; a prime count,
#: so that a matrix's rows start at different places of the pool (its width is not a multiple)
POOL = 4_194_301


def _fill(torch, model, std: float) -> None:
    """Random weights as the families' own init draws them: normal(0, std) for matrices and
    embeddings, ones for norm weights, zeros for biases and other vectors. The normal values
    are drawn once (a pool of ``POOL``) and copied in from a random offset, wrapping: drawing
    each of the model's values took most of the writer's time on a GPU node's CPU."""
    pools: dict = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                pool = pools.get(p.dtype)
                if pool is None:
                    drawn = torch.empty(POOL, dtype=torch.float32).normal_(0.0, std)
                    pool = pools[p.dtype] = drawn.to(p.dtype)
                _copy_wrapping(torch, pool, p.view(-1), int(torch.randint(POOL, (1,)).item()))
            elif "norm" in name.lower() and name.endswith("weight"):
                p.fill_(1.0)
            else:
                p.zero_()
    if hasattr(model, "tie_weights"):
        model.tie_weights()


def _copy_wrapping(torch, pool, flat, offset: int) -> None:
    """Fill ``flat`` with ``pool`` read from ``offset`` on, wrapping around its end."""
    done, n = 0, flat.numel()
    while done < n:
        take = min(n - done, pool.numel() - offset)
        flat[done : done + take].copy_(pool[offset : offset + take])
        done, offset = done + take, 0


class ProbeModelTooLarge(Exception):
    """The model the config describes has more parameters than the writer may allocate."""


def _count(torch, build, config, dtype) -> int | None:
    """The model's parameters, counted on torch's meta device (nothing allocated); None where
    the meta device cannot build it (then the config's own budget, set by envdoctor, holds)."""
    try:
        with torch.device("meta"), _no_init():
            try:
                meta = build(config, dtype=dtype)
            except TypeError:
                meta = build(config, torch_dtype=dtype)
        return sum(p.numel() for p in meta.parameters())
    except Exception:
        return None


def write(folder: str, seed: int = 0, max_parameters: int | None = None) -> dict:
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
    if max_parameters:
        count = _count(torch, build, config, dtype)
        if count is not None and count > max_parameters:
            size = count * torch.empty((), dtype=dtype).element_size()
            raise ProbeModelTooLarge(
                f"the probe model would have {count:,} parameters ({size / 1e9:.1f} GB), past the "
                f"writer's cap of {max_parameters:,}: nothing was allocated"
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
        cap = spec.get("max_parameters")
        result = {"ok": True, **write(spec["folder"], int(spec.get("seed", 0)), int(cap) if cap else None)}
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
