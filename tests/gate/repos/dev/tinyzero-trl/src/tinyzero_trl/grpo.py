# trimmed: the trl lines of the script
from trl import GRPOConfig, get_peft_config
from trl.trainer.utils import empty_cache
from tinyzero_trl.trainer import GRPOTrainer
class GRPOTrainingArguments(GRPOConfig):
    trainer = GRPOTrainer(
