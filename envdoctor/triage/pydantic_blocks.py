"""Pydantic's validation errors as a failure shape of a log (read by TRI039, ``bounds``).

Pydantic v2 prints a refused model as a block::

    pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedZeroConfig
    stage3_prefetch_bucket_size
      Input should be a valid integer, got a number with a fractional part [type=int_from_float, …]
        For further information visit https://errors.pydantic.dev/2.9/v/int_from_float

The header ("N validation error(s) for MODEL") may be missing from a paste, each field's path is a
line of its own, the constraint line ends in ``[type=…, input_value=…, input_type=…]`` (vLLM's
model validators say "Value error, …" with ``type=value_error``), several fields may follow one
header, and a launcher's prefix (``[rank3]:``, ``(APIServer pid=1)``, a logger's level and time)
may stand before each line. Reading is bounded: only lines holding ``[type=`` start an error,
each line is read up to ``MAX_LINE`` characters and at most ``MAX_ERRORS`` errors are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_LINE = 4096  # characters of a line read
MAX_ERRORS = 32  # field errors kept from one log
LOOK_BACK = 3  # lines above a constraint line where its field's path may stand
HEADER_BACK = 4  # lines above a block's first field where its header may stand

_HEADER = re.compile(r"\b(?P<n>\d{1,4}) validation errors? for (?P<model>[A-Za-z_][\w.\[\], ]{0,120}?)\s*$")
_CONSTRAINT = re.compile(
    r"^(?P<msg>[^\[\n]{1,600}?) ?\[type=(?P<type>[\w.]{1,80})"
    r"(?:, input_value=(?P<value>.{0,400}?))?(?:, input_type=(?P<itype>[\w.]{1,80}))?\]\s*$"
)
_FIELD = re.compile(r"[A-Za-z_][\w-]{0,80}(?:\.[\w-]{1,80}|\[\d{1,6}\]){0,12}")
_INFO = "For further information visit"


@dataclass(frozen=True)
class FieldError:
    """One refused field: its path, pydantic's words, the error type and the value refused."""

    loc: str  # "stage3_prefetch_bucket_size", "zero_optimization.offload_param.device"; "" unshown
    msg: str  # "Input should be greater than or equal to 1"; vLLM's "Value error, " dropped
    type: str  # "greater_than_equal", "int_from_float", "value_error"
    value: str  # the input_value as printed ("" where not printed)
    input_type: str
    line_no: int  # 1-based line of the constraint

    @property
    def field(self) -> str:
        """The path's last name (``zero_optimization.stage`` -> ``stage``)."""
        return re.sub(r"\[\d+\]", "", self.loc).rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Block:
    """Pydantic's errors for one model, as the log shows them."""

    model: str  # "DeepSpeedZeroConfig"; "" where the header is not shown
    count: int  # the header's N (0 without a header)
    errors: tuple[FieldError, ...]
    start: int  # 1-based line of the header, or of the first field's path
    end: int  # 1-based line of the last constraint (or its "For further information" line)


def _field_above(lines: Sequence[str], i: int) -> tuple[str, int]:
    """The field path on a line of its own just above line index ``i`` (a blank line or pydantic's
    "For further information" line between them ends the search), and its index; ("", i)."""
    for j in range(i - 1, max(-1, i - 1 - LOOK_BACK), -1):
        text = lines[j].strip()[:MAX_LINE]
        if not text or text.startswith(_INFO) or "[type=" in text:
            break
        if _FIELD.fullmatch(text):
            return text, j
        if _HEADER.search(text):
            break
    return "", i


def blocks(lines: Sequence[str], first_line: int = 1) -> list[Block]:
    """The validation blocks of ``lines`` (prefixes already stripped; ``first_line``: the 1-based
    number of ``lines[0]``)."""
    out: list[Block] = []
    current: dict[str, object] | None = None
    errors: list[FieldError] = []
    kept = 0
    for i, raw in enumerate(lines):
        if "[type=" not in raw:
            continue
        text = raw.strip()[:MAX_LINE]
        m = _CONSTRAINT.match(text)
        if m is None:
            continue
        loc, at = _field_above(lines, i)
        msg = m.group("msg").strip().removeprefix("Value error, ").removeprefix("Assertion failed, ").strip()
        error = FieldError(
            loc,
            msg,
            m.group("type"),
            (m.group("value") or "").strip(),
            m.group("itype") or "",
            first_line + i,
        )
        # the header: above the field, within a few lines, with nothing but other errors between
        header = None
        for j in range(at - 1, max(-1, at - 1 - HEADER_BACK), -1):
            h = _HEADER.search(lines[j][:MAX_LINE])
            if h is not None:
                header = (h, j)
                break
            if "[type=" in lines[j] or not lines[j].strip():
                break
        end = first_line + i + (1 if i + 1 < len(lines) and lines[i + 1].strip().startswith(_INFO) else 0)
        joins = current is not None and header is None and first_line + at - int(str(current["end"])) <= 2
        if joins and current is not None:
            errors.append(error)
            current["end"] = end
        else:
            if current is not None:
                out.append(_block(current, errors))
            model, count = (
                (header[0].group("model").strip(), int(header[0].group("n"))) if header else ("", 0)
            )
            start = first_line + (header[1] if header else at)
            current = {"model": model, "count": count, "start": start, "end": end}
            errors = [error]
        kept += 1
        if kept >= MAX_ERRORS:
            break
    if current is not None:
        out.append(_block(current, errors))
    return out


def _block(current: dict[str, object], errors: list[FieldError]) -> Block:
    return Block(
        str(current["model"]),
        int(str(current["count"])),
        tuple(errors),
        int(str(current["start"])),
        int(str(current["end"])),
    )
