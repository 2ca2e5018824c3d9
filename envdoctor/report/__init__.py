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
    """The report in ``fmt``. Every string goes through ``envdoctor.redact`` first: secrets
    masked, long values cut, control characters escaped (JSON escapes them itself)."""
    from envdoctor.redact import safe_report

    safe = safe_report(report, escape=fmt != "json")
    return FORMATS[fmt](safe, verbose=verbose, color=color)
