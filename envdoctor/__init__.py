"""envdoctor: a preflight validator and environment doctor for GRPO training with TRL + vLLM.

Importing this package imports no torch, transformers or trl: ``preflight`` and
``PreflightError`` load on first use, ``EnvDoctorCallback`` (which imports transformers) only
when asked for.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["PreflightError", "__version__", "preflight"]

_LAZY = {
    "preflight": "envdoctor.api",
    "PreflightError": "envdoctor.api",
    "EnvDoctorCallback": "envdoctor.integrations.callback",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'envdoctor' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
