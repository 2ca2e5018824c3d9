from .grpo_trainer import Qwen2VLGRPOTrainer
from .grpo_config import GRPOConfig


__all__ = ["Qwen2VLGRPOTrainer"]
