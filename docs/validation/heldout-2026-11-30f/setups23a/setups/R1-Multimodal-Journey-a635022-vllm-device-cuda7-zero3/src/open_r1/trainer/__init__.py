from .grpo_trainer_vllm import Qwen2VLGRPOTrainer


__all__ = ["Qwen2VLGRPOTrainer"]
