from .grpo_trainer_vllm import Qwen2VLGRPOTrainer
from .grpo_trainer_vllm_caption import Qwen2VLGRPOTrainerCap

__all__ = ["Qwen2VLGRPOTrainer", "Qwen2VLGRPOTrainerCap"]
