"""Renderers: each takes a ``Report`` and returns text. The registry below is the only wiring."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from envdoctor.report.interface import Report

#: Each format: its name -> the module under envdoctor.report whose ``render`` writes it. A
#: renderer loads when its format is asked for (junit's XML library only for ``--format junit``).
FORMATS: dict[str, str] = {
    "text": "text",
    "json": "json_format",
    "junit": "junit",
    "sarif": "sarif",
}


def renderer(fmt: str) -> Callable[..., str]:
    """The ``render`` function of ``fmt``."""
    fn: Callable[..., str] = import_module(f"envdoctor.report.{FORMATS[fmt]}").render
    return fn


def render(
    report: Report, fmt: str = "text", verbose: bool = False, color: bool = False, quiet: bool = False
) -> str:
    """The report in ``fmt``. Every string goes through ``envdoctor.redact`` first, the same for
    every format: secrets masked, long values cut, control characters and bidi overrides shown
    as escapes (``\\x1b``), newlines too except in JSON (whose encoder writes them ``\\n``).
    ``quiet`` (text only): the errors and the summary line alone."""
    from envdoctor.redact import safe_report

    extra = {"quiet": True} if quiet and fmt == "text" else {}  # --quiet: errors and summary
    return renderer(fmt)(safe_report(report, fmt), verbose=verbose, color=color, **extra)
