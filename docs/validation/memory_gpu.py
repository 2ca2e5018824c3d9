"""Measure the trainer's peak GPU memory in real GRPO steps, one shape after another, in one process.

Random-weight models built from real configs (Qwen2.5-0.5B / -1.5B values, no download), a
word-level tokenizer made in-process, TRL's GRPOTrainer with use_vllm false on one GPU, two
optimizer steps per shape (the second holds the optimizer states). For each shape it records
torch.cuda.max_memory_allocated / max_memory_reserved and the peak NVML reading for this process
(or the device's used memory when NVML lists no process), or the OOM.

    python docs/validation/memory_gpu.py OUT.jsonl [SHAPE_NAME ...]
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time

QWEN25_05B = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
              "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
              "vocab_size": 151936, "tie_word_embeddings": True,
              "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1e6}
QWEN25_15B = {**QWEN25_05B, "hidden_size": 1536, "intermediate_size": 8960,
              "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2}
MODELS = {"qwen2.5-0.5b": QWEN25_05B, "qwen2.5-1.5b": QWEN25_15B}

# name: model, per_device_train_batch_size, prompt tokens, max_completion_length,
# gradient_checkpointing, weight dtype
SHAPES = {
    "s1": ("qwen2.5-0.5b", 8, 128, 256, False, "float32"),
    "s2": ("qwen2.5-0.5b", 8, 128, 256, True, "float32"),
    "s3": ("qwen2.5-0.5b", 16, 128, 512, False, "float32"),
    "s4": ("qwen2.5-0.5b", 16, 128, 512, True, "float32"),
    "s5": ("qwen2.5-1.5b", 8, 128, 256, False, "float32"),
    "s6": ("qwen2.5-1.5b", 8, 128, 256, True, "float32"),
    "s7": ("qwen2.5-1.5b", 16, 128, 512, False, "bfloat16"),
    "s8": ("qwen2.5-1.5b", 32, 256, 1024, False, "float32"),
    "s9": ("qwen2.5-1.5b", 16, 128, 768, False, "float32"),
    "s10": ("qwen2.5-1.5b", 16, 128, 1024, False, "float32"),  # alloc fits, process does not
    "s11": ("qwen2.5-1.5b", 24, 128, 768, False, "float32"),
    # LoRA (peft): the 7th field is the adapter (r, target modules)
    "l1": ("qwen2.5-1.5b", 16, 128, 512, False, "bfloat16", (16, ("all-linear",))),
    "l2": ("qwen2.5-1.5b", 8, 128, 256, True, "float32", (64, ("q_proj", "v_proj"))),
}
WORDS = [f"w{i}" for i in range(200)]
DRY = os.environ.get("MEMORY_GPU_DRY") == "1"


def tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   unk_token="<unk>")
    fast.padding_side = "left"
    return fast


class Nvml:
    """Peak memory of this process (or of the device) while a shape runs."""

    def __init__(self) -> None:
        self.peak_proc = self.peak_dev = 0
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        if DRY:
            return
        import pynvml

        pynvml.nvmlInit()
        self.nv = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        self.peak_proc = 0
        self.peak_dev = 0
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def sample(self) -> None:
        if DRY:
            return
        try:
            procs = self.nv.nvmlDeviceGetComputeRunningProcesses(self.handle)
            mine = [p.usedGpuMemory for p in procs if p.pid == os.getpid() and p.usedGpuMemory]
            if mine:
                self.peak_proc = max(self.peak_proc, max(mine))
        except self.nv.NVMLError:
            pass
        used = self.nv.nvmlDeviceGetMemoryInfo(self.handle).used
        self.peak_dev = max(self.peak_dev, used)

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            time.sleep(0.02)

    def start(self) -> None:
        self.peak_proc = self.peak_dev = 0
        self.stop.clear()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        if self.thread:
            self.thread.join()
        self.sample()


def run_shape(name: str, nvml: Nvml, tok, out_dir: str) -> dict:
    import torch
    from datasets import Dataset
    from transformers import AutoConfig, AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    model_name, batch, prompt_len, comp, gc_on, dtype, *adapter = SHAPES[name]
    lora = adapter[0] if adapter else None
    result = {"shape": name, "model": model_name, "batch": batch, "prompt_len": prompt_len,
              "completion_len": comp, "gradient_checkpointing": gc_on, "dtype": dtype,
              "lora": list(lora) if lora else None}
    cfg = dict(MODELS[model_name])
    if DRY:  # a CPU rehearsal of the script: same code path, a tiny model
        cfg.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2)
        batch, comp = 4, 8
    config = AutoConfig.for_model(**cfg, pad_token_id=0, eos_token_id=1, bos_token_id=1)
    cuda = torch.cuda if not DRY else None
    if cuda:
        cuda.empty_cache()
        cuda.reset_peak_memory_stats()
    base_alloc = cuda.memory_allocated() if cuda else 0
    nvml.start()
    t0 = time.time()
    trainer = model = None
    try:
        with torch.device("cpu" if DRY else "cuda"):
            model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
        model.generation_config.pad_token_id = 0
        model.generation_config.eos_token_id = 1
        model.generation_config.suppress_tokens = None
        prompt = " ".join(WORDS[i % len(WORDS)] for i in range(prompt_len))
        result["prompt_tokens"] = len(tok(prompt)["input_ids"])
        data = Dataset.from_dict({"prompt": [prompt] * 64})
        args = GRPOConfig(
            output_dir=out_dir, max_steps=2, per_device_train_batch_size=batch,
            num_generations=4, max_completion_length=comp, learning_rate=1e-6,
            gradient_checkpointing=gc_on, bf16=not DRY, use_cpu=DRY, logging_steps=1, save_strategy="no",
            report_to="none", disable_tqdm=True, seed=0, use_vllm=False,
            dataloader_num_workers=0, temperature=1.0)
        peft_config = None
        if lora:
            from peft import LoraConfig

            targets = lora[1][0] if lora[1] == ("all-linear",) else list(lora[1])
            peft_config = LoraConfig(r=lora[0], lora_alpha=2 * lora[0], target_modules=targets,
                                     task_type="CAUSAL_LM")
        trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw:
                              [float(len(c)) for c in completions], args=args,
                              train_dataset=data, processing_class=tok, peft_config=peft_config)
        result["optimizer"] = args.optim
        trainer.train()
        result["status"] = "ok"
        hist = [h for h in trainer.state.log_history if "completions/mean_length" in h]
        if hist:
            result["mean_completion_len"] = hist[-1]["completions/mean_length"]
    except torch.OutOfMemoryError as exc:
        result["status"] = "oom"
        result["error"] = str(exc).splitlines()[0][:400]
    finally:
        nvml.finish()
        result["seconds"] = round(time.time() - t0, 1)
        if cuda:
            result["max_allocated"] = cuda.max_memory_allocated() - base_alloc
            result["max_reserved"] = cuda.max_memory_reserved()
            result["total_memory"] = cuda.get_device_properties(0).total_memory
        result["nvml_process_peak"] = nvml.peak_proc
        result["nvml_device_peak"] = nvml.peak_dev
        trainer = model = None  # noqa: F841
        gc.collect()
        if cuda:
            cuda.empty_cache()
    return result


def main() -> None:
    import torch
    import transformers
    import trl

    out = sys.argv[1]
    names = sys.argv[2:] or list(SHAPES)
    nvml = Nvml()
    nvml.sample()
    idle = nvml.peak_dev
    if not DRY:
        torch.cuda.init()
    tok = tokenizer()
    with open(out, "w") as fh:
        fh.write(json.dumps({"versions": {"torch": torch.__version__,
                                          "transformers": transformers.__version__,
                                          "trl": trl.__version__},
                             "gpu": "cpu (dry run)" if DRY else torch.cuda.get_device_name(0),
                             "device_used_before": idle}) + "\n")
        for name in names:
            result = run_shape(name, nvml, tok, "/tmp/memory-grpo")
            print(json.dumps(result), flush=True)
            fh.write(json.dumps(result) + "\n")
            fh.flush()


if __name__ == "__main__":
    main()
