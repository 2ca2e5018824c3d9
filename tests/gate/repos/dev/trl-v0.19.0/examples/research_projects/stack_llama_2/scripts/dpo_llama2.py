# trimmed: the trl lines of the script
from trl import DPOConfig, DPOTrainer
    training_args = DPOConfig(
    dpo_trainer = DPOTrainer(
