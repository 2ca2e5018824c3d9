from .grpo_trainer_vl import GRPOTrainerVL

__all__ = ["GRPOTrainerVL"]