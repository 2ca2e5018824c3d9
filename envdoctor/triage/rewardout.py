"""What a reward function returned, read where TRL turns it into rewards (DAT010, DAT013: the data
rules' own ids, with their fixes).

TRL's reward call (``trainercols.reward_call``: ``_calculate_rewards`` and its forerunners, and the
copies of GRPOTrainer that projects and Unsloth keep) maps each function's result with
``[reward if reward is not None else torch.nan for reward in output_reward_func]`` and stores it
with ``rewards_per_func[:, i] = torch.tensor(output_reward_func, …)``. Raised on those lines:

- ``TypeError: 'NoneType' object is not iterable``: a reward function returned None (DAT010);
- ``RuntimeError: The expanded size of the tensor (8) must match the existing size (4)``: it
  returned another number of rewards than completions (DAT013).

Only the frame's own source line proves it (the same messages are raised elsewhere for other
reasons): without it, nothing is said. Which reward function did it the frame does not tell.
"""

from __future__ import annotations

from envdoctor.findings import Severity
from envdoctor.triage import trainercols
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Traceback

_EACH = "each reward function"


def reward_output(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """DAT010 / DAT013 for ``tb`` (module docstring), or None."""
    from envdoctor.checks.data import reward_length_fix, reward_return_fix

    if not tb.frames:
        return None
    frame = tb.frames[-1]
    code = frame.code or ""
    trl = log.versions.get("trl")
    if "output_reward_func" not in code or not trainercols.reward_call(
        frame, trl.version if trl is not None else None, any_release=True
    ):
        return None
    at = f"{frame.at}{' in ' + frame.function if frame.function else ''}"
    if (
        tb.name == "TypeError"
        and "'NoneType' object is not iterable" in tb.message
        and " in output_reward_func" in code
    ):
        what = (
            f"a reward function returned None: TRL reads one reward per completion from its result ({at}); "
            "a function that ends without `return` (or returns early on a path) gives None"
        )
        d = finding("DAT010", [m], log, what, reward_return_fix(_EACH))
        return at_severity(d, Severity.ERROR)
    if (
        tb.name == "RuntimeError"
        and "must match the existing size" in tb.message
        and "rewards_per_func[" in code
    ):
        what = (
            "a reward function returned another number of rewards than there are completions: TRL "
            f"stores its result as one column of rewards, one per completion of the batch ({at})"
        )
        d = finding("DAT013", [m], log, what, reward_length_fix(_EACH))
        return at_severity(d, Severity.ERROR)
    return None
