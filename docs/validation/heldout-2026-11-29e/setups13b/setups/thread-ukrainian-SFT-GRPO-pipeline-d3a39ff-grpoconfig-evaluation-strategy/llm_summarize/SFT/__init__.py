from .SFT import run_SFT
