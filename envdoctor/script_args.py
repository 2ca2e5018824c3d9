"""A script's ``--key value`` arguments typed the way HfArgumentParser would likely type them.

Below plan (which parses launch lines) and redact (which masks secret-named options); it
imports nothing of envdoctor.
"""

from __future__ import annotations

import math
import re
from typing import Any

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


def coerce(value: str) -> Any:
    """A command-line value as HfArgumentParser would likely type it."""
    low = value.lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("none", "null"):
        return None
    if _INT.match(value):  # a longer one stays text: the config reader refuses it, naming it
        return int(value) if len(value) <= 40 else value
    if _FLOAT.match(value):
        number = float(value)
        return number if math.isfinite(number) else value  # 1e999 stays as typed
    return value


def parse_script_args(args: list[str]) -> dict[str, Any]:
    """``--key value`` / ``--key=value`` / ``--flag`` / ``--no_flag`` into a dict."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if not tok.startswith("--") or tok == "--":
            continue
        key, eq, val = tok[2:].partition("=")
        key = key.replace("-", "_")
        if eq:
            out[key] = coerce(val)
            continue
        values = []
        while i < len(args) and not args[i].startswith("--"):
            values.append(args[i])
            i += 1
        if not values:
            if key.startswith("no_"):
                out[key[3:]] = False
            else:
                out[key] = True
        elif len(values) == 1:
            out[key] = coerce(values[0])
        else:
            out[key] = [coerce(v) for v in values]
    return out


def arg_text(args: list[str], key: str) -> str | None:
    """The text of the last ``--key value`` / ``--key=value`` in ``args`` as typed (one value),
    else None: what HfArgumentParser hands a ``str`` field (``--scale_rewards False`` stays the
    string ``"False"``; ``coerce`` types it as a bool field would read it)."""
    found: str | None = None
    for i, tok in enumerate(args):
        name, eq, val = tok[2:].partition("=") if tok.startswith("--") else ("", "", "")
        if name.replace("-", "_") != key:
            continue
        if eq:
            found = val
        elif (
            i + 1 < len(args)
            and not args[i + 1].startswith("--")
            and (i + 2 >= len(args) or args[i + 2].startswith("--"))
        ):
            found = args[i + 1]
        else:
            found = None
    return found
