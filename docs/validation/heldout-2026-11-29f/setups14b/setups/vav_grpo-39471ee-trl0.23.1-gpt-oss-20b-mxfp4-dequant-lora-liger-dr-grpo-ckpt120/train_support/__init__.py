"""Helper utilities used by train_grpo.py."""

from .data_reward import load_prompt_dataset, reward_fn
from .step_stream import StepStream

__all__ = ["load_prompt_dataset", "reward_fn", "StepStream"]
