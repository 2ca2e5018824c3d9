# trimmed: the trl lines of the script
from open_r1.configs import GRPOConfig, GRPOScriptArguments
from trl import GRPOTrainer, ModelConfig, TrlParser, get_peft_config
    trainer = GRPOTrainer(
    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))
