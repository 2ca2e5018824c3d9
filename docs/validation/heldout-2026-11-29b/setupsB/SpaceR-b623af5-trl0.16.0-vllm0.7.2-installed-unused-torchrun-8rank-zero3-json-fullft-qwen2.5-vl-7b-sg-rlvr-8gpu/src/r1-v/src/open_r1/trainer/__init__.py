from .grpo_trainer import Qwen2VLGRPOTrainer
from .SG_RLVR_trainer import SGRLVRTrainer
from .vllm_grpo_trainer_modified import Qwen2VLGRPOVLLMTrainerModified
__all__ = [
    "Qwen2VLGRPOTrainer", 
    "Qwen2VLGRPOVLLMTrainerModified",
    "SGRLVRTrainer"
]
