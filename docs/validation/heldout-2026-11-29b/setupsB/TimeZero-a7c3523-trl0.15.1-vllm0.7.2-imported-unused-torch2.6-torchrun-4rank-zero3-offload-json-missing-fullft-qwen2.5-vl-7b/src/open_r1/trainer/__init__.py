from .grpo_trainer import Qwen2VLGRPOTrainer
from .grpo_trainer_video import Qwen2VLGRPOTrainer_Video

from .vllm_grpo_trainer import Qwen2VLGRPOVLLMTrainer
from .vllm_grpo_trainer_video import Qwen2VLGRPOVLLMTrainer_Video

__all__ = ["Qwen2VLGRPOTrainer", "Qwen2VLGRPOVLLMTrainer"]
