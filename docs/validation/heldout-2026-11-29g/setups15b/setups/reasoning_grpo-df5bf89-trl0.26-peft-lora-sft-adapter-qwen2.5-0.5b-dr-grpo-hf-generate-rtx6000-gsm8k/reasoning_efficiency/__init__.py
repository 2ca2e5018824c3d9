"""Utilities for verifier-guided efficient-reasoning experiments."""

from .answers import answers_equal, extract_final_answer, normalize_answer
from .rewards import RewardConfig, RewardComputer

__all__ = [
    "RewardConfig",
    "RewardComputer",
    "answers_equal",
    "extract_final_answer",
    "normalize_answer",
]

