"""The one result type every rule, the probe and triage produce."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    """How bad a finding is; ``error`` fails the check (exit 1)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


@dataclass(frozen=True)
class Finding:
    """One thing envdoctor found: what is wrong, and the exact fix.

    ``rule`` is the id of the rule (its documentation lives in ``rules/*.yaml``);
    ``evidence`` holds the facts that made it fire (shown with ``-v`` and in JSON).
    """

    rule: str
    severity: Severity
    message: str
    fix: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "fix": self.fix,
            "evidence": self.evidence,
        }
