"""One integer coercion for values read from configs, launch lines, the environment and JSON.

Base layer: imports nothing of envdoctor, so every layer may use it.
"""

from __future__ import annotations

from typing import Any, overload


@overload
def as_int(
    value: Any, default: int, *, low: int | None = None, high: int | None = None, strict: bool = False
) -> int: ...
@overload
def as_int(
    value: Any, default: None = None, *, low: int | None = None, high: int | None = None, strict: bool = False
) -> int | None: ...
def as_int(
    value: Any,
    default: int | None = None,
    *,
    low: int | None = None,
    high: int | None = None,
    strict: bool = False,
) -> int | None:
    """``int(value)``, or ``default`` when it has none or falls outside ``[low, high]``.

    ``strict``: only a real ``int`` counts (a JSON number; not a string, a float or a bool).
    Never raises: a value Python cannot turn into an int (None, ``"abc"``, ``inf``, a string of
    more digits than Python converts) gives ``default``.
    """
    if strict and (not isinstance(value, int) or isinstance(value, bool)):
        return default
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    if (low is not None and out < low) or (high is not None and out > high):
        return default
    return out
