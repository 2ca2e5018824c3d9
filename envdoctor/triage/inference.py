"""A tensor made under ``torch.inference_mode()`` reached autograd (TRI016).

torch refuses to record an inference tensor for backward ("Inference tensors cannot be saved for
backward"), to update one in place outside inference mode, or to track its version counter. In RL
training such a tensor comes from the rollout side — generation, or a log-prob pass of the policy or
the reference model run under ``torch.inference_mode()`` — and is then used in the loss: a bug of the
release of the RL stack that computed it (TRL's ``old_per_token_logps`` with ``num_iterations > 1``,
huggingface/trl#2953; Unsloth's fast-inference path for new models), or of the user's own code (a
reward function, a custom loss) run under ``inference_mode``. The traceback shows where the tensor was
used, not where it was made: the finding names the stack package whose frames ran the step, and is
a warning — which release made the tensor is not shown by the log.
"""

from __future__ import annotations

import re

from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import Draft, Log, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Frame, Traceback

RULE = "TRI016"
_MESSAGE = re.compile(
    r"Inference tensors? (?:cannot be saved for backward|do(?:es)? not track version counter)"
    r"|[Ii]nplace update to inference tensor outside InferenceMode"
    r"|Cannot set version_counter for inference tensor"
)
#: packages whose frames are the tensor library or a model's forward, not the code that ran the step
_PLUMBING = frozenset({"torch", "transformers", "accelerate", "peft", "deepspeed", None})
#: how a finding names a package, and the packages upgraded with it
_COMPANIONS = {"unsloth": "unsloth_zoo", "unsloth-zoo": "unsloth"}


def _step_frame(tb: Traceback) -> Frame | None:
    """The deepest frame of a stack package that is not torch's or a model's (the RL stack's code
    that ran the step), or None."""
    for t in reversed(tb.all()):
        for f in reversed(t.frames):
            if f.package not in _PLUMBING:
                return f
    return None


def inference_tensor(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI016 for ``tb`` (module docstring), or None."""
    if tb.name != "RuntimeError" or _MESSAGE.search(tb.message[:2000]) is None:
        return None
    step = _step_frame(tb)
    where = ""
    if step is not None:
        where = f" — the step ran in {step.package}'s {step.function or 'code'} ({step.at})"
    what = (
        "a tensor made under torch.inference_mode() (generation, or a log-prob pass of the policy or the "
        "reference model) was used in the training step, and torch refuses it in autograd" + where
    )
    if step is not None:
        pkg = str(step.package)
        companion = _COMPANIONS.get(pkg)
        upgrade = f"{pkg} to its latest release"
        if companion:
            upgrade = f"{pkg} and {companion} to their latest releases"
        fix = (
            f"upgrade {upgrade} (releases of "
            "RL stacks that computed a tensor of the loss under inference_mode were fixed to use no_grad: "
            "huggingface/trl#2953 for TRL's num_iterations > 1); in your own code (a reward function, a "
            "custom loss or trainer) use torch.no_grad() in place of torch.inference_mode(), or .clone() "
            "the tensor before the loss"
        )
    else:
        fix = (
            "find the torch.inference_mode() block that made the tensor (your reward function, custom loss "
            "or trainer, or the RL stack's generation / log-prob pass): use torch.no_grad() there, or "
            ".clone() the tensor before the loss; if it is the stack's, upgrade it (huggingface/trl#2953: "
            "TRL's num_iterations > 1)"
        )
    d = finding(RULE, [m], log, what, fix, package=step.package if step else None)
    f = d.finding  # which release made the tensor is not shown: likely, not proved
    d.finding = Finding(f.rule, Severity.WARNING, f.message, f.fix, f.evidence)
    return d
