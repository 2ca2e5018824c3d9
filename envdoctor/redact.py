"""Secrets the user typed into a launch line or a config (``HF_TOKEN=… torchrun``,
``--hub_token …``, ``hub_token:``) never reach a report: their values become ``****``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from envdoctor.facts.environment import MASK, is_secret
from envdoctor.plan.interface import Plan
from envdoctor.plan.launch import parse_script_args

MIN_LEN = 4  # shorter values ("1", "on") are not worth hiding and would garble the text


def plan_secrets(plan: Plan) -> set[str]:
    """Values of secret-named variables, options and config keys of the plan."""
    found: set[str] = set()
    for launch in plan.launches:
        found |= {v for k, v in launch.env.items() if is_secret(k)}
        options = {**launch.options, **parse_script_args(launch.script_args)}
        found |= {str(v) for k, v in options.items() if is_secret(k)}
    found |= {str(v) for k, v in plan.config.items() if is_secret(k) and v is not None}
    return {s for s in found if len(s) >= MIN_LEN}


def scrub(value: Any, secrets: set[str]) -> Any:
    """``value`` (strings inside dicts and lists too) with every secret replaced."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub(v, secrets) for v in value)
    return value


def redact_report(report: Any, secrets: set[str]) -> None:
    """Replace the secrets in every text of a ``Report``, in place."""
    if not secrets:
        return
    for area in report.areas:
        area.summary, area.note = scrub(area.summary, secrets), scrub(area.note, secrets)
        area.findings = [replace(f, message=scrub(f.message, secrets), fix=scrub(f.fix, secrets),
                                 evidence=scrub(f.evidence, secrets)) for f in area.findings]
    report.subject = scrub(report.subject, secrets)
    report.layout = scrub(report.layout, secrets)
    report.layout_summary = scrub(report.layout_summary, secrets)
    report.upgrade_plan = scrub(report.upgrade_plan, secrets)
    report.extra = scrub(report.extra, secrets)
