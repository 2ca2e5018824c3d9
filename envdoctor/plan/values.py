"""Config values as TRL's parser reads them (``HfArgumentParser`` over argparse).

TRL's ``TrlParser`` makes a config file's values the parser's defaults, and argparse converts a
default that is a string with the field's type: ``"1e-5"`` (a string to YAML 1.1) becomes a float,
``"eight"`` for an int field stops the run. Non-string values are passed through unconverted.
"""

from __future__ import annotations

from typing import Any

TRUE = ("yes", "true", "t", "y", "1")  # transformers.hf_argparser.string_to_bool
FALSE = ("no", "false", "f", "n", "0")
_NOUN = {"int": "an int", "float": "a float", "bool": "a bool", "str": "a str"}


def as_bool(value: Any) -> bool | None:
    """``value`` as a bool field reads it, or None when the parser would refuse it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.lower()
        if low in TRUE:
            return True
        if low in FALSE:
            return False
    return None


def type_problem(value: Any, kind: str, optional: bool) -> str | None:
    """Why a value does not fit a field of type ``kind`` (int, float, bool, str), or None."""
    if value is None:
        return None if optional else "null for a field that needs a value"
    if kind == "bool":
        if as_bool(value) is None:
            return "not a boolean (true/false)"
        return None
    if isinstance(value, bool) and kind in ("int", "float"):
        return f"a boolean for {_NOUN[kind]} field"
    if isinstance(value, str):
        if kind == "str":
            return None
        try:
            (int if kind == "int" else float)(value)
        except ValueError:
            return f"not {_NOUN[kind]}"
        return None
    if kind == "int" and isinstance(value, int):
        return None
    if kind == "float" and isinstance(value, (int, float)):
        return None
    if kind == "str" and isinstance(value, (int, float)):
        return None  # argparse keeps it; str fields such as vllm_device accept "0" or 0 alike
    return f"a {type(value).__name__} where {_NOUN[kind]} is expected"
