"""A config key the training script's own ``GRPOConfig(...)`` call sets, changed where the code
sets it: the keyword taken out of the call, or given the fix's value, as line edits of the script
(``FileEdit``). A fix that only edits the config file leaves the code's value running, so the
closure proves the remedy with both edits (``apply``); where the code sets the key in a way no
line edit reaches (a ``**mapping``, a later ``cfg.key = …``), ``EditError`` says so and the
remedy is not printed.
"""

from __future__ import annotations

from typing import Any

from envdoctor.findings import FileEdit
from envdoctor.plan.interface import CodeKeyword, TrainingScript
from envdoctor.remedy.file_edit import EditError


def code_edits(
    script: TrainingScript | None, remove: list[str], values: dict[str, Any]
) -> tuple[FileEdit, ...]:
    """The script's line edits that take each key of ``remove`` out of its GRPOConfig(...) calls
    and give each key of ``values`` its value there, last line first (a deleted line does not
    move the edits above it); ``EditError`` when one cannot be made."""
    if script is None or not script.path:
        raise EditError("the training script sets it in code, and envdoctor did not read the script")
    edits: list[FileEdit] = []
    for key in [*remove, *values]:
        places = script.config_keywords.get(key, ())
        if not places:
            raise EditError(f"{script.path} sets `{key}` in code where envdoctor cannot edit it")
        for place in places:
            path = _written_in(place) or script.path
            edits.append(_edit(path, key, place, key not in values, values.get(key)))
    lines = [(e.path, e.line) for e in edits]  # the script's lines and a module's are others
    if len(set(lines)) != len(lines):
        raise EditError(f"{script.path}: two of these keywords share a line; edit it by hand")
    return tuple(sorted(edits, key=lambda e: (e.path, -e.line)))


def _written_in(place: CodeKeyword) -> str | None:
    """The file the call is written in (``CodeKeyword.written_in``)."""
    return place.written_in


def _edit(path: str, key: str, place: CodeKeyword, drop: bool, value: Any) -> FileEdit:
    if drop:
        if place.drop is None:
            raise EditError(
                f"`{key}` in {place.where} cannot be cut from the call cleanly; remove it by hand"
            )
        line, old, new = place.drop
        return FileEdit(path=path, line=line, old=old, new=new)
    if place.value is None:
        raise EditError(f"`{key}` in {place.where} is not written on one line; set it by hand")
    line, start, end, text = place.value
    raw = text.encode("utf-8")
    new_text = (raw[:start] + literal(value).encode("utf-8") + raw[end:]).decode("utf-8")
    return FileEdit(path=path, line=line, old=(text,), new=(new_text,))


def literal(value: Any) -> str:
    """``value`` as Python source (``True``, ``0.3``, ``'auto'``)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (list, tuple, dict)):
        return repr(value)
    raise EditError(f"{value!r} has no literal envdoctor writes into a script")


def said(edits: tuple[FileEdit, ...]) -> str:
    """The script edits said short: ``in train.py line 12: `max_prompt_length=4096,` removed``."""
    out = []
    for e in sorted(edits, key=lambda e: e.line):
        old = " ".join(x.strip() for x in e.old)
        new = " ".join(x.strip() for x in e.new)
        out.append(
            f"{e.path} line {e.line}: `{old}` → `{new}`"
            if new
            else f"{e.path} line {e.line}: `{old}` deleted"
        )
    return "; ".join(out)
