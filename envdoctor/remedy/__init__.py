"""Fixes as data, proved before they are printed: apply a finding's remedy to a copy of the
inputs and run the rules again (``closure``); the changes as one merged remedy (``apply``).

``check`` keeps only the remedies that hold (``prove``); ``envdoctor fix`` applies every fix
that holds, one after another, and proves their merged change in one round (``close``).
"""

from envdoctor.remedy.apply import apply, launch_lines, merge
from envdoctor.remedy.closure import Closure, Rerun, close, prove, why_not

__all__ = ["Closure", "Rerun", "apply", "close", "launch_lines", "merge", "prove", "why_not"]
