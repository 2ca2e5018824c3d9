"""Repositories of the declared-stack tests: open-r1-like recipes and pins, committed with git."""

from __future__ import annotations

from pathlib import Path

from tests.integrations.helpers import git, user_repo

#: The pins of huggingface/open-r1's setup.py at b806e10 ("Bump vLLM and TRL", 2025-05-28);
#: vLLM 0.8.5.post1 is the release its README installs first.
OPEN_R1_PINS = {
    "accelerate": "1.4.0",
    "deepspeed": "0.16.8",
    "torch": "2.6.0",
    "transformers": "4.52.3",
    "trl[vllm]": "0.18.0",
    "vllm": "0.8.5.post1",
}
#: The shape of open-r1's recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml (its keys).
RECIPE = """\
# Model arguments
model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct
model_revision: main
torch_dtype: bfloat16
attn_implementation: flash_attention_2
dataset_name: open-r1/OpenR1-Math-220k
dataset_prompt_column: problem
# GRPO trainer config
bf16: true
use_vllm: true
do_eval: false
gradient_accumulation_steps: 4
gradient_checkpointing: true
learning_rate: 2.0e-05
log_completions: true
max_prompt_length: 512
max_completion_length: 1024
max_steps: -1
num_generations: 16
num_train_epochs: 1
output_dir: data/Qwen2.5-1.5B-Open-R1-GRPO
per_device_train_batch_size: 16
reward_funcs:
- accuracy
- format
reward_weights:
- 1.0
- 1.0
save_strategy: "epoch"
seed: 42
warmup_ratio: 0.1
"""
ZERO3 = """\
compute_environment: LOCAL_MACHINE
deepspeed_config:
  zero3_init_flag: true
  zero_stage: 3
distributed_type: DEEPSPEED
mixed_precision: bf16
num_machines: 1
num_processes: 8
"""
CONFIGS = ("recipes/grpo/config_demo.yaml", "recipes/accelerate_configs/zero3.yaml")
#: A TRL 0.15-era config: vllm_device went away in TRL 0.18.0.
LEGACY = "use_vllm: true\nvllm_device: auto\nnum_generations: 4\nper_device_train_batch_size: 4\n"


def requirements(pins: dict[str, str]) -> str:
    return "".join(f"{name}=={version}\n" for name, version in pins.items())


def committed_repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository with these files committed, as a user's repository."""
    repo = user_repo(path, {CONFIGS[0]: RECIPE, CONFIGS[1]: ZERO3, **files})
    git(repo, "commit", "-qm", "training stack")
    return repo
