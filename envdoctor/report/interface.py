"""The report: findings grouped by area, plus what was resolved; renderers only format it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envdoctor.findings import Finding, Severity

if TYPE_CHECKING:  # a report lists suppressions only where [tool.envdoctor] ignore has some
    from envdoctor.suppression import Suppressed

REPORT_SCHEMA = "envdoctor.report/1"


@dataclass
class Area:
    key: str
    title: str
    summary: str = ""
    findings: list[Finding] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    note: str = ""  # e.g. "not run (add --probe)"
    data: dict[str, Any] = field(default_factory=dict)  # structured facts (the probe's model…)

    @property
    def status(self) -> str:
        """``error``, ``warning``, ``ok`` or ``skipped``: nothing ran, or the note says why the
        area was not checked (an info finding such as "no GPU seen" is no tick)."""
        sev = {f.severity for f in self.findings}
        if Severity.ERROR in sev:
            return "error"
        if Severity.WARNING in sev:
            return "warning"
        if self.note or not (self.findings or self.ran):
            return "skipped"
        return "ok"


@dataclass
class Report:
    areas: list[Area]
    subject: str = "this machine"
    version: str = ""
    layout: list[dict[str, Any]] = field(default_factory=list)
    layout_summary: str = ""
    upgrade_plan: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    #: where a finding without a file of its own is located (SARIF): the GRPO config, else the
    #: accelerate config, the snapshot, the launched script or the log read; "" for none
    artifact: str = ""
    #: findings a ``[tool.envdoctor] ignore`` entry silenced: listed with their reason, never
    #: counted (exit code, summary counts)
    suppressed: list[Suppressed] = field(default_factory=list)
    #: values known to be secret (the plan's), masked by every renderer; never rendered
    secrets: set[str] = field(default_factory=set, repr=False)

    @property
    def findings(self) -> list[Finding]:
        return [f for a in self.areas for f in a.findings]

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def internal_errors(self) -> list[Finding]:
        """Rules that crashed: envdoctor could not check what they check."""
        return [f for f in self.findings if f.evidence.get("internal")]

    def exit_code(self, strict: bool = False) -> int:
        """2 when a rule failed internally (the verdict is incomplete), 1 on errors (and on
        warnings with ``strict``), else 0."""
        if self.internal_errors:
            return 2
        if self.count(Severity.ERROR) or (strict and self.count(Severity.WARNING)):
            return 1
        return 0
