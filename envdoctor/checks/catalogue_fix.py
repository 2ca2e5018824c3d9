"""A known failure's config fix as data: the catalogue's ``fix`` and ``workaround`` say it in words
(``top_p: 1.0  # or vllm_importance_sampling_correction: false``; ``remove top_k``); each
``key: value`` or ``remove key`` of a key the entry's ``when.config`` names is a candidate remedy,
in the order written, for the closure to prove (the entry no longer matches, nothing is added)."""

from __future__ import annotations

import re
from typing import Any

from envdoctor.findings import Remedy
from envdoctor.knowledge.failures import KnownFailure

_SET = re.compile(r"^([a-z_][a-z0-9_]*)\s*:\s*([^\s,;()#]+)")
_REMOVE = re.compile(r"^remove\s+`?([a-z_][a-z0-9_]*)`?")
#: where a sentence of the fix offers another way (``# or``, ``, or``, ``;``)
_SPLIT = re.compile(r"#|;|,?\s\bor\b\s")


def config_remedies(failure: KnownFailure) -> list[Remedy]:
    """The candidates the entry's fix and workaround name for its own config keys."""
    keys = set(failure.config)
    out: list[Remedy] = []
    for text in (failure.fix, failure.workaround or ""):
        for part in _SPLIT.split(text):
            part = part.strip().removeprefix("or ").strip()
            found = _SET.match(part)
            if found and found.group(1) in keys:
                key, value = found.group(1), _scalar(found.group(2))
                remedy = Remedy(config_set={key: value}, fix=f"set {key}: {found.group(2)}")
            elif (gone := _REMOVE.match(part)) and gone.group(1) in keys:
                remedy = Remedy(config_remove=(gone.group(1),), fix=f"remove {gone.group(1)}")
            else:
                continue
            if remedy not in out:
                out.append(remedy)
    return out


def _scalar(text: str) -> Any:
    """A YAML scalar as the config file would give it (true, 1.0, 2, token_truncate)."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text.strip("'\"")
