"""What a usage failure's log shows of the user's inputs (issue #36).

A catalogue entry of the data and usage classes (``rules/knowledge/known_failures/usage.yaml``:
labels beyond the head, a head reloaded without ``num_labels``, a DatasetDict where a split is
expected …) is matched by its symptoms like every entry (``classes.known_failure``); here its
diagnosis is given what the log shows:

- **the values** its symptom's named groups read (``reads``: "a label of {target}"), said with the
  entry's templates; two shapes (``checkpoint`` / ``model``, ``torch.Size([4, 1024])``) are also
  compared dimension by dimension ("dimension 0: 4 in the checkpoint, 2 in the model"); the
  inputs a model was given (``inputs``) tell whether labels were among them (``with_labels`` /
  ``without_labels``, empty values a template names to be said only then);
- **the user's frame** (``usage``): the innermost frame of the user's own code (a script's file, a
  notebook's cell) in the traceback that ends at the line: the call that passed the data;
- **a library between** (``passed_by``): a frame of a package that neither raises these messages
  (``STACK``) nor is the entry's own, deeper than the user's frame (a trainer's collator, a CLI's
  loader, fast-bert's own masking): that library may have built what failed, so the finding is a
  warning naming both readings unless the message decides (``symptom_decides``).

Pure text work on the matched line and the lines before it; nothing is imported but the
traceback parser.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from envdoctor.triage.interface import Match

#: lines after a message's first line read for its values (the list under "Error(s) in loading
#: state_dict for …:" is read from the line the symptom matched itself)
_SHAPE = re.compile(r"\d{1,9}")
_NAME = re.compile(r"\{([a-z_]{1,40})\}")
BEFORE = 400  # lines before the failing line read for the user's frame
#: the inputs transformers' losses read
_LABELS = {"labels", "label", "label_ids", "start_positions", "end_positions"}


def values(entry: Any, m: Match) -> dict[str, str]:
    """The named groups the entry's symptoms read on the matched line (a value read by an
    earlier symptom stands); the two shapes compared where both were read (``shape_diff``)."""
    got: dict[str, str] = {}
    line = m.text[:8192]
    for s in getattr(entry, "symptoms", ()):
        regex = s.regex
        if regex is None or not regex.groupindex:
            continue
        found = regex.search(line)
        if found is None:
            continue
        for k, v in found.groupdict().items():
            if v is not None and v.strip() and k not in got:
                got[k] = v.strip()
    if "inputs" in got:  # the inputs a model was given: whether labels were among them
        given = {x.strip() for x in got["inputs"].split(",")}
        got["with_labels" if given & _LABELS else "without_labels"] = ""
        outputs = {x.strip() for x in got.get("keys", "").split(",")}
        # the name every transformers loss reads (a "label" column the model got as is is the data's)
        if "labels" in given and "logits" in outputs:  # a head made logits, yet no loss from labels
            got["labels_dropped"] = ""
        elif "labels" in given and outputs - {""}:  # hidden states only: a class without the task's head
            got["headless"] = ""
    diff = shape_diff(got.get("checkpoint", ""), got.get("model", ""))
    if diff:
        got["shape_diff"] = diff
    return got


def shape_diff(checkpoint: str, model: str) -> str:
    """Where two shapes differ: "dimension 0: 4 in the checkpoint, 2 in the model"; '' when
    either is not a shape or they have different ranks (said as they are by the template)."""
    a, b = _SHAPE.findall(checkpoint), _SHAPE.findall(model)
    if not a or not b or len(a) != len(b):
        return ""
    dims = [
        f"dimension {i}: {x} in the checkpoint, {y} in the model"
        for i, (x, y) in enumerate(zip(a, b, strict=True))
        if x != y
    ]
    return "; ".join(dims)


def read_fix(entry: Any, got: dict[str, str]) -> str:
    """The fix of the first reading the log shows (``read_fixes``), else the entry's."""
    return next((fix for name, fix in getattr(entry, "read_fixes", ()) if name in got), entry.fix)


def said(entry: Any, got: dict[str, str]) -> list[str]:
    """The entry's ``reads`` templates whose every value was read, filled in."""
    out = []
    for template in getattr(entry, "reads", ()):
        names = _NAME.findall(template)
        if names and all(n in got for n in names):
            out.append(_NAME.sub(lambda n: got[n.group(1)], template))
    return out


def _before(m: Match, head: bytes) -> list[str]:
    """The lines before ``m``: up to ``BEFORE`` of them from the log's head where the line lies in
    it (a notebook's traceback starts with the user's cells, often further up than the scan's
    context keeps), else the scan's context."""
    if head and m.line_no > 0:
        lines = head.split(b"\n", m.line_no)[:-1]
        if len(lines) == m.line_no:  # the whole line stands in the head
            return [
                x.decode("utf-8", "replace").rstrip("\r")
                for x in lines[max(0, m.line_no - 1 - BEFORE) : m.line_no - 1]
            ]
    return list(m.context)


#: the packages that raise these messages or pass the user's objects through unchanged (a model's
#: forward, a wrapper, a launcher): a frame of any other package deeper than the user's frame is
#: a library's own code that built what failed (a trainer's collator, a CLI's loader)
STACK = {
    "torch",
    "transformers",
    "datasets",
    "tokenizers",
    "accelerate",
    "peft",
    "deepspeed",
    "safetensors",
    "huggingface-hub",
    "huggingface_hub",
    "numpy",
}


def _frames(m: Match, head: bytes) -> list[Any]:
    """The frames of the traceback that ends at ``m`` (or, for a line of its own after the
    exception's, the one before it), outermost first; [] when the log shows none."""
    from envdoctor.triage.traceback import failure

    context = _before(m, head)
    if not context:
        return []
    tb = failure(context, m.text, m.line_no)
    return [] if tb is None else [f for t in tb.all() for f in t.frames]


def user_frame(m: Match, head: bytes = b"", frames: list[Any] | None = None) -> str:
    """The innermost frame of the user's own code in the traceback that ends at ``m``:
    ``train.py:41 (trainer.train())``; '' when the traceback shows none."""
    from envdoctor.triage.usercode import _frame_text, _mine

    mine = [f for f in (_frames(m, head) if frames is None else frames) if _mine(f)]
    if not mine:
        return ""
    f = mine[-1]
    if "(" in f.function:  # a notebook cell's frame keeps the signature: ``train_model(model,``
        f = replace(f, function=f.function.split("(", 1)[0])
    code = " ".join(f.code.split())[:160]
    return _frame_text(f) + (f" (`{code}`)" if code else "")


def library_between(frames: list[Any], own: tuple[str, ...] = ()) -> str:
    """The package, not of the raising stack (``STACK``) nor one the entry is about (``own``: its
    ``packages``, TRL for an entry of GRPOTrainer's chat template), whose frame lies deeper than
    the user's last frame (or anywhere, where the traceback shows none of the user's): its own
    code built what failed, or passed it on; '' when none does."""
    from envdoctor.triage.usercode import _mine

    last = max((i for i, f in enumerate(frames) if _mine(f)), default=-1)
    for f in reversed(frames[last + 1 :]):
        if f.package and f.package not in STACK and f.package not in own:
            return str(f.package)
    return ""


def describe(entry: Any, m: Match, head: bytes = b"") -> tuple[str, dict[str, Any]]:
    """The words the diagnosis of a usage entry adds (what the log shows, the user's frame) and
    the evidence they rest on."""
    got = values(entry, m)
    parts = said(entry, got)
    evidence: dict[str, Any] = {}
    if got:
        evidence["values"] = got
    frames = _frames(m, head) if getattr(entry, "usage", False) else []
    frame = user_frame(m, head, frames) if frames else ""
    library = library_between(frames, tuple(getattr(entry, "packages", {}) or ()))
    if library:
        evidence["passed_by"] = library
    if frame:
        parts.append(f"your code's call that passed it: {frame}")
        evidence["user_frame"] = frame
    return ("; the log shows: " + "; ".join(parts) if parts else ""), evidence
