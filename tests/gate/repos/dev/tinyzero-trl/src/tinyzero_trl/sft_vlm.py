# trimmed: the trl lines of the script
from trl import SFTConfig, SFTTrainer, get_peft_config
from trl.trainer.utils import empty_cache
    parser = HfArgumentParser((ScriptArguments, SFTConfig, ALLModelConfig))
    trainer = SFTTrainer(
