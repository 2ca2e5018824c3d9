"""The keyword history of transformers' model classes (rules/knowledge/signatures/
transformers-models.keywords.gz, derived from the release wheels by scripts/derive_model_keywords.py):
per method (``forward``, ``generate``, ``__init__``; ``config``: a configuration class's
attributes: its ``__init__``'s parameters, its body's fields, its methods' ``self.X =``), per
class-name suffix (``ForCausalLM``, ``Model``, ``Config`` …) and per keyword, the releases in which
the classes take it by name, with the class stems (``Qwen2``) whose own releases differ; and the
releases in which each class takes ``**kwargs``. Read lazily, by triage only, for a model class's
``TypeError`` of a keyword or a configuration's missing attribute."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor.knowledge.gzip_json import mask

SCHEMA = "envdoctor.model_keywords/1"
MAX_BYTES = 1024 * 1024
FILE = "transformers-models.keywords.gz"
#: a model or configuration class's name: stem and suffix (the derive script's split)
_CLASS = re.compile(r"^(?P<stem>[A-Z]\w{0,200}?)(?P<suffix>For[A-Z]\w{0,100}|PreTrainedModel|Model|Config)$")


def split_class(name: str) -> tuple[str, str] | None:
    m = _CLASS.match(name)
    return (m.group("stem"), m.group("suffix")) if m else None


@dataclass(frozen=True)
class Takes:
    """What the history says of ``cls.method`` and ``keyword``: the releases in which the class
    has the method (``scope``), takes the keyword by name (``named``), takes ``**kwargs`` (``var``)."""

    releases: tuple[str, ...]
    scope: int
    named: int
    var: int


@dataclass
class History:
    releases: list[str]
    scope: dict[str, Any]
    methods: dict[str, Any]
    var: dict[str, Any]

    def _cell(self, table: dict[str, Any], key: str, suffix: str) -> dict[str, Any]:
        rows = table.get(key)
        row = rows.get(suffix) if isinstance(rows, dict) else None
        return row if isinstance(row, dict) else {}

    def takes(self, cls: str, method: str, keyword: str) -> Takes | None:
        """The history of ``cls.method`` (``method`` ``config``: the configuration's attributes)
        and ``keyword``; None where ``cls`` is no model class of the history (the user's own), or
        the keyword is one no class gained or lost (the derive script keeps only those)."""
        parts = split_class(cls)
        if parts is None:
            return None
        stem, suffix = parts
        if (suffix == "Config") != (method == "config"):
            return None
        scope = mask(self._cell(self.scope, method, suffix).get(stem, ""))
        if not scope:
            return None
        cell = self._cell(self.methods, method, suffix).get(keyword)
        if not isinstance(cell, dict):
            return None  # a keyword no class gained or lost: no drift to tell
        if stem in cell:
            named = mask(cell[stem])
        elif stem in str(cell.get("-", "")).split():
            named = 0
        else:
            named = mask(cell.get("", "")) & scope
        var = mask(self._cell(self.var, method, suffix).get(stem, "")) & scope
        return Takes(tuple(self.releases), scope, named & scope, var)


@lru_cache(maxsize=1)
def history() -> History | None:
    """The model keyword history, or None where the file is absent or not one."""
    from envdoctor.knowledge.gzip_json import load
    from envdoctor.resources import rules_dir

    doc = load(rules_dir() / "knowledge" / "signatures" / FILE, SCHEMA, MAX_BYTES)
    if doc is None:
        return None
    releases = doc.get("releases")
    parts = [doc.get(k) for k in ("scope", "methods", "var")]
    if not isinstance(releases, list) or not releases or not all(isinstance(p, dict) for p in parts):
        return None
    return History([str(r) for r in releases], *parts)  # type: ignore[arg-type]
