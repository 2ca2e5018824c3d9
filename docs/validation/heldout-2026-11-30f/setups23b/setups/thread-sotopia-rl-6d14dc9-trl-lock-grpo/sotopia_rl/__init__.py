from .rm_trainer import SotopiaRMTrainer
from .sft_trainer import SotopiaSFTTrainer
from .ppo_trainer import SotopiaPPOTrainer
from .grpo_trainer import SotopiaGRPOTrainer

__all__ = ["SotopiaPPOTrainer", "SotopiaRMTrainer", "SotopiaSFTTrainer", "SotopiaGRPOTrainer"]
