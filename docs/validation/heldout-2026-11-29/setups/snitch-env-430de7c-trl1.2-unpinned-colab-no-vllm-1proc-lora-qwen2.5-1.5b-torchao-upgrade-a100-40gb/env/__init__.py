from env.snitch_env import SnitchEnv
from env.trace_format import Trace, TraceStep
from env.reward import compute_reward

__all__ = ["SnitchEnv", "Trace", "TraceStep", "compute_reward"]
