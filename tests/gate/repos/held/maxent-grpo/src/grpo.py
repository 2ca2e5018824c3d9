# trimmed: the trl lines of the script
This script wires up a standard ``trl.GRPOTrainer`` with:
``configs.ScriptArguments``/``configs.GRPOConfig`` and TRL's ``TrlParser``.
- ``main``: Load data/model, construct ``GRPOTrainer``, train/eval, and handle
from configs import GRPOConfig, ScriptArguments
    :type training_args: trl.GRPOConfig
    from trl import GRPOTrainer, get_peft_config
    trainer = GRPOTrainer(
    from trl import ModelConfig, TrlParser
    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig))
