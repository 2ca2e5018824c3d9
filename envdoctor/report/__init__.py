"""Renderers: each takes a ``Report`` and returns text. The registry below is the only wiring."""

from __future__ import annotations

from collections.abc import Callable

from envdoctor.report import json_format, junit, sarif, text
from envdoctor.report.interface import Report

FORMATS: dict[str, Callable[..., str]] = {
    "text": text.render,
    "json": json_format.render,
    "junit": junit.render,
    "sarif": sarif.render,
}


def render(report: Report, fmt: str = "text", verbose: bool = False, color: bool = False) -> str:
    """The report in ``fmt``. Every string goes through ``envdoctor.redact`` first, the same for
    every format: secrets masked, long values cut, control characters and bidi overrides shown
    as escapes (``\\x1b``), newlines too except in JSON (whose encoder writes them ``\\n``)."""
    from envdoctor.redact import safe_report

    return FORMATS[fmt](safe_report(report, fmt), verbose=verbose, color=color)
