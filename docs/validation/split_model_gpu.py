"""One training process, several GPUs visible, no distributed launcher: what TRL 1.x does.

TRL >= 0.26 loads a model given by name or path with ``device_map="auto"`` (``create_model_from_path``
in trl/trainer/utils.py) unless the run is distributed, so the model is split over every visible GPU
and ``Trainer`` runs it model-parallel (one GPU at a time) instead of wrapping it in
``nn.DataParallel``; a model given as an object still goes to ``Trainer``'s DataParallel path, which
TRL >= 1.15 refuses. This script runs one real GRPO step (no vLLM) each way and prints what it saw.

    python3 docs/validation/split_model_gpu.py path|object
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from memory_gpu import DRY, MODELS, WORDS, _save, tokenizer  # noqa: E402


class PerGpu:
    """Peak NVML memory of this process on every GPU, sampled every 20 ms."""

    def __init__(self) -> None:
        import pynvml

        pynvml.nvmlInit()
        self.nv = pynvml
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i)
                        for i in range(pynvml.nvmlDeviceGetCount())]
        self.peak = [0] * len(self.handles)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            for i, h in enumerate(self.handles):
                for p in self.nv.nvmlDeviceGetComputeRunningProcesses(h):
                    if p.pid == os.getpid() and p.usedGpuMemory:
                        self.peak[i] = max(self.peak[i], p.usedGpuMemory)
            time.sleep(0.02)

    def finish(self) -> list[int]:
        self.stop.set()
        self.thread.join()
        return self.peak


def main() -> None:
    from datasets import Dataset
    from transformers import AutoConfig, AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    how = sys.argv[1]
    nvml = PerGpu()
    tok = tokenizer()
    out: dict = {"given": how, "visible": os.environ.get("CUDA_VISIBLE_DEVICES", "all")}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        config = AutoConfig.for_model(**MODELS["qwen2.5-0.5b"], pad_token_id=0, eos_token_id=1,
                                      bos_token_id=1)
        path = _save(config, "float32", tok, f"{tmp}/model")
        model = path if how == "path" else AutoModelForCausalLM.from_pretrained(path)
        args = GRPOConfig(output_dir=f"{tmp}/out", max_steps=1, per_device_train_batch_size=4,
                          num_generations=4, max_completion_length=16, learning_rate=1e-6,
                          logging_steps=1, save_strategy="no", report_to="none", bf16=not DRY, use_cpu=DRY,
                          use_vllm=False, seed=0)
        try:
            trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw:
                                  [float(len(c)) for c in completions], args=args,
                                  train_dataset=Dataset.from_dict({"prompt": [" ".join(WORDS[:8])] * 16}),
                                  processing_class=tok)
            m = trainer.model
            out.update(n_gpu=args.n_gpu, is_model_parallel=trainer.is_model_parallel,
                       device_map_devices=sorted({str(d) for d in
                                                  (getattr(m, "hf_device_map", None) or {}).values()}))
            trainer.train()
            out.update(status="ok", wrapped=type(trainer.model_wrapped).__name__)
        except Exception as exc:  # noqa: BLE001 - what TRL says is the result
            out.update(status="error", error=f"{type(exc).__name__}: {str(exc)[:300]}")
    out["seconds"] = round(time.time() - t0, 1)
    out["nvml_peak_mib_per_gpu"] = [p // 2**20 for p in nvml.finish()]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
