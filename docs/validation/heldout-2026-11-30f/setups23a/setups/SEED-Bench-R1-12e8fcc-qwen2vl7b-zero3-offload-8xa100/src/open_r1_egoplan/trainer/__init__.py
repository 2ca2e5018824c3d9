from .grpo_trainer import Qwen2VLGRPOTrainer


__all__ = ["Qwen2VLGRPOTrainer"]
