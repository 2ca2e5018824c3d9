"""Where the data under the top-level ``rules/`` folder lives (in the wheel or the checkout)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def rules_dir() -> Path:
    """``envdoctor/_rules`` inside an installed wheel, else the checkout's ``rules/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("envdoctor's rules/ data folder is missing from this installation")
