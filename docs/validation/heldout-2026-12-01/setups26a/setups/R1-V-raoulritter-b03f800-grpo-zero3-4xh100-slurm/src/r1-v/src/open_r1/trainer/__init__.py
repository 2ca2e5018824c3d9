from .grpo_trainer import Qwen2VLGRPOTrainer
from .vllm_grpo_trainer import Qwen2VLGRPOVLLMTrainer 
from .vllm_grpo_trainer_modified import Qwen2VLGRPOVLLMTrainerModified

__all__ = [
    "Qwen2VLGRPOTrainer", 
    "Qwen2VLGRPOVLLMTrainer",
    "Qwen2VLGRPOVLLMTrainerModified"
]
