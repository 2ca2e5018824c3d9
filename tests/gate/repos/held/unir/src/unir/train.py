# trimmed: the trl lines of the script
# This file is a modified version of the original GRPOTrainer from Hugging Face TRL (https://github.com/huggingface/trl)
from trl import   TrlParser, get_peft_config
