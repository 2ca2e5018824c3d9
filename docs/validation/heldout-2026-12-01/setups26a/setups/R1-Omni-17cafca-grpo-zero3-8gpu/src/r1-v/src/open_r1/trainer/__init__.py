from .grpo_trainer import Qwen2VLGRPOTrainer
from .vllm_grpo_trainer import Qwen2VLGRPOVLLMTrainer
from .humanOmni_grpo_trainer import HumanOmniVLGRPOTrainer 

__all__ = ["Qwen2VLGRPOTrainer", "Qwen2VLGRPOVLLMTrainer", "HumanOmniVLGRPOTrainer"]
