from .grpo_trainer import Qwen2VLGRPOTrainer
from .grpo_trainer_weatherrft import Qwen2VLGRPOTrainerWeatherRFT
from .vllm_grpo_trainer import Qwen2VLGRPOVLLMTrainer 
from .vllm_grpo_trainer_modified import Qwen2VLGRPOVLLMTrainerModified
from .vllm_grpo_trainer_weatherrft import Qwen2VLGRPOVLLMTrainerWeatherRFT

__all__ = [
    "Qwen2VLGRPOTrainer", 
    "Qwen2VLGRPOVLLMTrainer",
    "Qwen2VLGRPOVLLMTrainerModified",
    "Qwen2VLGRPOVLLMTrainerWeatherRFT",
    "Qwen2VLGRPOTrainerWeatherRFT"
]
