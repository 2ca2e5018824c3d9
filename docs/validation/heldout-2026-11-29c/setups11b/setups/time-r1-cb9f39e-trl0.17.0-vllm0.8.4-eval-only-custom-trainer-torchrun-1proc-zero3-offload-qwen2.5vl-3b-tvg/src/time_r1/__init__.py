from .rl import TimeR1_Trainer, TimeR1_Trainer_ft

__all__ = [
    "TimeR1_Trainer",
    "TimeR1_Trainer_ft",
]
