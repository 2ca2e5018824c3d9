# trimmed: the trl lines of the script
from open_r1.configs import ScriptArguments, SFTConfig
from trl import ModelConfig, SFTTrainer, TrlParser, get_peft_config, setup_chat_format
    trainer = SFTTrainer(
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
