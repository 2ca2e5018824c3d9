"""Suppressions: ``[tool.envdoctor] ignore`` entries (read by ``envdoctor.settings.parse_ignore``)
that silence a rule or one finding, each with the reason the project gave. A suppressed finding
is not dropped: the report lists it, the suppression and its reason (text with ``-v`` and a
summary line, JSON ``suppressed``, SARIF ``suppressions``); it does not count towards the exit
code.

An entry is a rule (an id, an id prefix such as ``LAY``, or a rule name), either as a plain string
(``"LAY003"``: the whole rule, "no reason given") or as a table with a ``reason`` and, to silence
one finding rather than the rule, fields the finding's evidence must hold (``file``, ``key``, or
any other evidence field ``-v`` / JSON show)::

    ignore = [
      "PKG010",
      {rule = "LAY003", reason = "the script pins one GPU itself"},
      {rule = "CFG004", key = "hub_model_revision", reason = "our script's own argument"},
    ]
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from envdoctor.findings import Finding

NO_REASON = "no reason given"


@dataclass(frozen=True)
class Suppression:
    """One ``ignore`` entry: ``rule`` (id, prefix or name), its ``reason``, the evidence fields a
    finding must hold to be silenced (none: every finding of the rule), and where it was set."""

    rule: str
    reason: str = ""
    where: dict[str, Any] = field(default_factory=dict)
    source: str = "[tool.envdoctor] ignore"

    @property
    def why(self) -> str:
        return self.reason or NO_REASON

    def covers_rule(self, rule_id: str, name: str) -> bool:
        return rule_id.startswith(self.rule.upper()) or name == self.rule

    def silences(self, finding: Finding, name: str) -> bool:
        """Whether this entry silences ``finding`` (of the rule named ``name``)."""
        if not self.covers_rule(finding.rule, name):
            return False
        ev = finding.evidence
        # ``key = "x"`` also matches a finding about several keys (``keys: [..., "x"]``)
        return all(_holds(ev.get(k, ev.get(k + "s")), v, k) for k, v in self.where.items())

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "reason": self.why, "match": dict(self.where), "source": self.source}

    def label(self) -> str:
        """``LAY003`` or ``CFG004 key=hub_model_revision``."""
        return " ".join([self.rule, *(f"{k}={v}" for k, v in self.where.items())])


@dataclass(frozen=True)
class Suppressed:
    """A finding a suppression silenced, with the area it belongs to."""

    finding: Finding
    suppression: Suppression
    area: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.finding.to_dict(), area=self.area, suppression=self.suppression.to_dict())


def _holds(actual: Any, wanted: Any, key: str) -> bool:
    if isinstance(actual, (list, tuple, set, frozenset)):
        return any(_holds(a, wanted, key) for a in actual)
    if actual is None:
        return False
    if key == "file" and isinstance(actual, str) and isinstance(wanted, str):
        a, w = os.path.normpath(actual), os.path.normpath(wanted)
        return a == w or a.endswith(os.sep + w)
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return actual is wanted
    return actual == wanted or str(actual) == str(wanted)


def split(
    findings: list[Finding], suppressions: list[Suppression], name: str
) -> tuple[list[Finding], list[tuple[Finding, Suppression]]]:
    """``findings`` of one rule (named ``name``) into (kept, silenced with the entry that did)."""
    kept, silenced = [], []
    for f in findings:
        entry = next((s for s in suppressions if s.silences(f, name)), None)
        if entry is None:
            kept.append(f)
        else:
            silenced.append((f, entry))
    return kept, silenced
