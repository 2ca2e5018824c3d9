"""Fill vLLM's model-info cache in the probe's own cache dir while the trainer imports.

The first time vLLM meets a model class it inspects it in a new Python process (so that the
engine's own process does not initialise CUDA) and keeps the answer in
``$VLLM_CACHE_ROOT/modelinfos``, keyed by a hash of the model's source file. The probe's
``VLLM_CACHE_ROOT`` is its temp dir, so without this every probe would pay that extra import
of vLLM inside ``LLM()`` (colocate) or the server's start: about 20 s on an H100. Started by
the runner at the probe's start under the interpreter that will run vLLM, with the same
environment, this script does the inspection ahead of time and leaves vLLM's own cache file.
vLLM checks the hash and uses it, or inspects again (a vLLM without that cache ignores it):
nothing here can change what vLLM decides, only when the work is done.

    python vllm_warm.py OUT.json ARCH [ARCH ...]

Writes ``OUT.json``: per architecture "cached" (written here), "hit" (already there),
"inspected" (vLLM's own ``inspect_model_cls``), "unknown" (not in vLLM's registry) or the
error; never fails the probe.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _warm(registry: Any, arch: str) -> str:
    model: Any = registry.ModelRegistry.models.get(arch)
    if model is None:
        return "unknown"
    hash_of = getattr(model, "_get_modelinfo_module_hash", None)
    load = getattr(model, "_load_modelinfo_from_cache", None)
    save = getattr(model, "_save_modelinfo_to_cache", None)
    info_cls = getattr(registry, "_ModelInfo", None)
    name = getattr(model, "module_name", None)
    spec = importlib.util.find_spec(name) if isinstance(name, str) else None
    origin = spec.origin if spec is not None else None
    if hash_of is None or load is None or save is None or info_cls is None or not origin:
        model.inspect_model_cls()  # vLLM's own way: its subprocess, and its cache where it has one
        return "inspected"
    digest = hash_of(Path(origin))
    if load(digest) is not None:
        return "hit"
    save(info_cls.from_model_cls(model.load_model_cls()), digest)
    return "cached"


def main() -> int:
    out, arches = sys.argv[1], sys.argv[2:]
    start = time.perf_counter()
    report: dict[str, Any] = {"architectures": {}}
    registry: Any = None
    try:
        from vllm.model_executor.models import registry as found

        registry = found
        from vllm.plugins import load_general_plugins

        load_general_plugins()  # out-of-tree models register here, as before vLLM's own inspection
    except BaseException as exc:  # no vLLM here: vLLM's own start will say so
        report["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    report["import_s"] = round(time.perf_counter() - start, 3)
    for arch in arches if registry is not None else []:
        try:
            report["architectures"][arch] = _warm(registry, arch)
        except BaseException as exc:  # vLLM inspects it itself, and says what is wrong
            report["architectures"][arch] = f"{type(exc).__name__}: {str(exc)[:300]}"
    report["seconds"] = round(time.perf_counter() - start, 3)
    tmp = out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(report, fh)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # no interpreter teardown of vLLM's and torch's modules: the answer is written
