from guac.training.grpo_trainer import GUACGRPOTrainer
from guac.training.reinforce_trainer import ReinforceTrainer

__all__ = ["GUACGRPOTrainer", "ReinforceTrainer"]
