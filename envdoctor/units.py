"""Sizes in one place: the binary units, one formatter and one parser.

Base layer: imports nothing of envdoctor. A size is written in the units PyTorch, vLLM and
nvidia-smi print (``23.8 GiB``, ``412 MiB``); the names without ``i`` (``GB``, ``MB``) that logs
and users also write count as the binary units, as PyTorch and nvidia-smi mean them.
"""

from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4

#: Unit names as logs, the command line and envdoctor write them (lower case), in bytes.
UNITS = {
    "b": 1,
    "bytes": 1,
    "kib": KiB,
    "kb": KiB,
    "k": KiB,
    "mib": MiB,
    "mb": MiB,
    "m": MiB,
    "gib": GiB,
    "gb": GiB,
    "g": GiB,
    "tib": TiB,
    "tb": TiB,
    "t": TiB,
}
_SMALLER = {"TiB": "GiB", "GiB": "MiB", "MiB": "KiB"}


def size_text(
    n: float | None,
    unit: str = "GiB",
    digits: int = 1,
    *,
    of: str = "B",
    step_down: bool = False,
    grouped: bool = False,
    floor: bool = False,
    with_unit: bool = True,
) -> str:
    """``n`` (counted in ``of``: ``"B"``, ``"MiB"``…) written in ``unit``: ``"23.8 GiB"``; ``"?"``
    when ``n`` is None (not known).

    ``digits``: decimals; ``step_down``: below one ``unit``, the next smaller unit with no
    decimals (``"412 MiB"``); ``grouped``: thousands separated (``"1,024 MiB"``); ``floor``: whole
    units rounded down (``"8 MiB"`` for a limit); ``with_unit``: the number alone (a table whose
    header names the unit).
    """
    if n is None:
        return "?"
    value = n * UNITS[of.lower()] if of.lower() not in ("b", "bytes") else n
    scale = UNITS[unit.lower()]
    if step_down and value < scale and unit in _SMALLER:
        unit, digits = _SMALLER[unit], 0
        scale = UNITS[unit.lower()]
    sep = "," if grouped else ""
    text = f"{int(value // scale):{sep}d}" if floor else f"{value / scale:{sep}.{digits}f}"
    return f"{text} {unit}" if with_unit else text


def parse_size(
    number: str | None, unit: str | None = None, *, default: str = "GiB", into: str = "B"
) -> float | None:
    """``number`` ``unit`` (``"2.00"``, ``"GiB"``) as a count of ``into``; ``unit`` missing or
    unknown counts as ``default``. None when ``number`` is not a number (``"1.2.3"``)."""
    try:
        value = float(number)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    factor = UNITS.get((unit or default).lower(), UNITS[default.lower()]) / UNITS[into.lower()]
    return value * factor


def billions(count: float, digits: int = 2) -> str:
    """A parameter count in billions: ``"1.54B"``."""
    return f"{count / 1e9:.{digits}f}B"


def model_label(name: str, count: float) -> str:
    """A model's name with its parameter count, or the count alone when the name is a rounded
    count already (a bare ``--model-params``): ``"Qwen/Qwen2.5-7B, 7.62B parameters"``,
    ``"7.60B parameters"``."""
    counted = f"{billions(count)} parameters"
    return counted if name.endswith(" parameters") else f"{name}, {counted}"
