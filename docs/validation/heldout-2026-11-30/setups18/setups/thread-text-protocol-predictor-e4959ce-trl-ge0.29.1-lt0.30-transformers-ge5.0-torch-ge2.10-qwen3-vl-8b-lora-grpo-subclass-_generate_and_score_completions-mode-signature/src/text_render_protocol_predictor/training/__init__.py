from .collator import ProtocolGenerationCollator, ProtocolSFTCollator
from .grpo_trainer import build_hf_grpo_dataset, grpo_conversation, train_grpo
from .prompts import ProtocolPromptTemplate

__all__ = [
    "ProtocolGenerationCollator",
    "ProtocolPromptTemplate",
    "ProtocolSFTCollator",
    "build_hf_grpo_dataset",
    "grpo_conversation",
    "train_grpo",
]
