# trimmed: the trl lines of the script
from src.open_r1.configs import GRPOConfig
from trl import  ModelConfig, ScriptArguments, TrlParser, get_peft_config
from src.open_r1.grpo_trainer_math import GRPOTrainer
    trainer = GRPOTrainer(
    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))
