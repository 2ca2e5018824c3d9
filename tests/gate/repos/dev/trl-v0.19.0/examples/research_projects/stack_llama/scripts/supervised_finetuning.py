# trimmed: the trl lines of the script
from trl import SFTTrainer
from trl.trainer import ConstantLengthDataset
    trainer = SFTTrainer(
