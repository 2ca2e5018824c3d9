from .base import TrainingConfig
from .sft import train_sft
from .reward import train_reward
from .dpo import train_dpo
from .grpo import train_grpo, GRPOExtraConfig
