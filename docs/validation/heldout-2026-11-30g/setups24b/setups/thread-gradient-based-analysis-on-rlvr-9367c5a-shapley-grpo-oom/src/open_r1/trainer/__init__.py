from .grpo_trainer import GRPOTrainer
from .grpo_trainer_with_shapely import GRPOTrainerWithShapely
from .sft_trainer import CustomSFTTrainer

__all__ = ["GRPOTrainer", "CustomSFTTrainer", "GRPOTrainerWithShapely"]