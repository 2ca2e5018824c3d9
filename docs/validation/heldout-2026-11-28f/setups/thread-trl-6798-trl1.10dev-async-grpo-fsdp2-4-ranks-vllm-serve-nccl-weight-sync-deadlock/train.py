# verbatim from huggingface/trl issue 6797 (2026-08-19), 'Reproduction' section
from datasets import Dataset
from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

def reward_len(completions, **kwargs):
    return [-abs(20 - len(c[-1]["content"])) for c in completions]

dataset = Dataset.from_list(
    [{"prompt": [{"role": "user", "content": f"Write a short story about item {i}."}]} for i in range(4096)]
)
config = AsyncGRPOConfig(
    output_dir="out", per_device_train_batch_size=1, gradient_accumulation_steps=128,
    max_completion_length=1024, max_steps=12, save_strategy="no",
)
trainer = AsyncGRPOTrainer(model="Qwen/Qwen3-32B", args=config, train_dataset=dataset, reward_funcs=reward_len)
trainer.train()
