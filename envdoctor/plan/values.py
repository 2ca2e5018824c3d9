"""Config values as TRL's parser reads them (``HfArgumentParser`` over argparse).

TRL's ``TrlParser`` makes a config file's values the parser's defaults, and argparse converts a
default that is a string with the field's type: ``"1e-5"`` (a string to YAML 1.1) becomes a float,
``"eight"`` for an int field stops the run. Non-string values are passed through unconverted.
"""

from __future__ import annotations

from typing import Any

from envdoctor.plan.placeholders import placeholder

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


#: Counts that decide the batch shape: a real run is far below this; above it the value is a
#: typo or an attack, and arithmetic on it (listing divisors for CFG002) must stay bounded.
MAX_COUNT = 1_000_000
COUNTS = (
    "per_device_train_batch_size",
    "per_device_eval_batch_size",
    "num_generations",
    "gradient_accumulation_steps",
    "generation_batch_size",
    "steps_per_generation",
    "num_iterations",
    "vllm_tensor_parallel_size",
    "vllm_data_parallel_size",
)
#: Other numbers: no setting of a GRPO run comes near.
MAX_NUMBER = 10**15


def validate(key: str, value: Any, origin: str) -> None:
    """Refuse, where a config value is read, what no rule can judge: non-finite or absurdly
    large numbers, a server port or URL that is not one. Raises ``InputError`` naming the
    origin (the file, ``command line``) and the key; wrong types that TRL itself would refuse
    are left to CFG005."""
    import math

    from envdoctor.errors import InputError

    def fail(problem: str) -> None:
        raise InputError(origin, f"key '{key}': {problem}")

    if origin == "command line" and isinstance(value, str) and placeholder(value):
        return  # a launch line's $PORT, as a script holds it: its value is the shell's, not known here

    if isinstance(value, float) and not math.isfinite(value):
        fail(f"{value} is not a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        fail(f"{_short(value)} is out of range")
    if isinstance(value, str) and len(value) > 40 and value.strip().lstrip("+-").isdigit():
        fail(f"a number of {len(value):,} characters (at most 40)")
    number = _number(value)
    if number is not None and not isinstance(value, bool):
        if not math.isfinite(number):
            fail(f"{value!r:.40} is not a finite number")
        if key in COUNTS and abs(number) > MAX_COUNT:
            fail(f"{_short(value)} is larger than any real run uses (at most {MAX_COUNT:,})")
        if abs(number) > MAX_NUMBER:
            fail(f"{_short(value)} is out of range")
    if key in ("vllm_server_port", "vllm_group_port") and value is not None:
        port = int(number) if number is not None and number == int(number) else None
        if isinstance(value, bool) or port is None or not 0 < port < 65536:
            fail(f"{_short(value)} is not a TCP port (1-65535)")
    if (
        key in ("vllm_server_base_url", "vllm_server_host")
        and value is not None
        and not isinstance(value, str)
    ):
        fail(f"{_short(value)} is not a {'URL' if key.endswith('url') else 'host name'}")
    if (
        key == "vllm_server_base_url"
        and isinstance(value, str)
        and value
        and not value.startswith(("http://", "https://"))
    ):
        fail(f"{_short(value)} is not an http(s) URL (e.g. http://10.0.0.2:8000)")


def _number(value: Any) -> float | None:
    """The number a value stands for as TRL's parser reads it (a string converts), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and len(value) <= 40:
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _short(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 128:  # str() of it may be refused
        return f"a number of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else f"{text[:20]}… ({len(text):,} characters)"


def small_divisors(total: int, count: int = 6, scan: int = 10_000) -> list[int]:
    """Up to ``count`` divisors of ``total`` above 1, smallest first, looking at most ``scan``
    candidates (then ``total`` itself): bounded work for any number."""
    found = [g for g in range(2, min(total, scan) + 1) if total % g == 0][:count]
    if len(found) < count and total > scan:
        found.append(total)
    return found
