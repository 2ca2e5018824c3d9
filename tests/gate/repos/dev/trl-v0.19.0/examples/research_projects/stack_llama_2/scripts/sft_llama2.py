# trimmed: the trl lines of the script
from trl import SFTConfig, SFTTrainer
from trl.trainer import ConstantLengthDataset
parser = HfArgumentParser((ScriptArguments, SFTConfig))
trainer = SFTTrainer(
