"""A real GRPO run on one GPU, logged as a user's run is: the log behind triage's benchmark.

TRL's GRPOTrainer with vLLM colocate (0.3 of the GPU), the probe's tiny model (written to a temp
dir: random weights, byte-level tokenizer, no download), 8 per device × 4 generations (or
the batch given),
``max_steps`` steps with tqdm and a metrics line per step. Everything it prints (TRL, vLLM's
engine, transformers, warnings) goes to stdout/stderr as in a user's terminal; the shell script
keeps it.

    python3 docs/validation/grpo_log_gpu.py [STEPS [PER_DEVICE_BATCH]]
    python3 docs/validation/grpo_log_gpu.py oom UTIL

``oom``: a run that dies as users' colocate runs do (triage's class 5): a random-weight
Qwen2.5-1.5B (float32, memory_gpu.py's checkpoint writer), vLLM colocated at UTIL of the GPU,
16 per device × (128 + 768) tokens without gradient checkpointing: the trainer step needs
~72 GiB (memory_gpu.py's s9), more than vLLM's share leaves.
"""

from __future__ import annotations

import sys
import tempfile

from envdoctor.probe.plan.tinymodel import write_tiny_model

PROMPTS = ["Write a haiku about GPUs.", "What is 12 + 30?", "Name three prime numbers.",
           "Explain GRPO in one line.", "Say hello in French.", "Count to five."]


def reward_len(completions, **kwargs):
    return [-abs(20 - len(c)) / 20 for c in completions]


def oom(util: float) -> None:
    import os

    from datasets import Dataset
    from transformers import AutoConfig
    from trl import GRPOConfig, GRPOTrainer

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from memory_gpu import MODELS, WORDS, _save, tokenizer

    cfg = MODELS["qwen2.5-1.5b"]
    tok = tokenizer(cfg["vocab_size"])
    with tempfile.TemporaryDirectory() as tmp:
        model = _save(AutoConfig.for_model(**cfg, pad_token_id=0, eos_token_id=1, bos_token_id=1),
                      "float32", tok, f"{tmp}/model")
        prompt = " ".join(WORDS[i % len(WORDS)] for i in range(128))
        args = GRPOConfig(
            output_dir=f"{tmp}/out", max_steps=2, per_device_train_batch_size=16,
            num_generations=4, max_completion_length=768, learning_rate=1e-6, logging_steps=1,
            gradient_checkpointing=False, save_strategy="no", report_to="none", bf16=True,
            use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=util, seed=0,
            model_init_kwargs={"dtype": "float32"})
        GRPOTrainer(model=model, reward_funcs=reward_len, args=args, processing_class=tok,
                    train_dataset=Dataset.from_dict({"prompt": [prompt] * 64})).train()


def main() -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    if sys.argv[1:2] == ["oom"]:
        return oom(float(sys.argv[2]))
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    with tempfile.TemporaryDirectory() as tmp:
        model = write_tiny_model(f"{tmp}/model")
        data = Dataset.from_dict({"prompt": PROMPTS * 64})
        args = GRPOConfig(
            output_dir=f"{tmp}/out", max_steps=steps, per_device_train_batch_size=batch,
            num_generations=4, max_completion_length=64, learning_rate=1e-5, logging_steps=1,
            save_strategy="no", report_to="none", bf16=True, use_vllm=True,
            vllm_mode="colocate", vllm_gpu_memory_utilization=0.3, seed=0)
        trainer = GRPOTrainer(model=str(model), reward_funcs=reward_len, args=args,
                              train_dataset=data)
        trainer.train()


if __name__ == "__main__":
    main()
