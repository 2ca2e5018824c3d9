# trimmed: the trl lines of the script
from src.open_r1.configs import GRPOConfig
from src.open_r1.grpo_trainer_fnd_macro import GRPOTrainer
from trl import  ModelConfig, ScriptArguments, TrlParser, get_peft_config
    trainer = GRPOTrainer(
    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))
