"""JSON Schemas (draft 2020-12) of envdoctor's JSON formats, shipped in the package:
``report`` (check / triage / diff / preflight), ``hook``, ``snapshot`` (collect), ``fix``
(``envdoctor fix``). ``load("report")`` returns one as a dict."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

NAMES = ("report", "hook", "snapshot", "fix")


def path(name: str) -> Any:
    """The schema file of ``name`` (a ``Traversable``: a file in the installed package)."""
    return resources.files(__name__) / f"{name}.schema.json"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path(name).read_text(encoding="utf-8"))
    return data
