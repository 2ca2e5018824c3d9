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
class FileEdit:
    """One edit of a text file the run reads (a launch script, the training script, a config or
    requirement file), by line: the lines ``line`` .. ``line + len(old) - 1`` (1-based), which
    must read ``old`` (without their line ends), become ``new`` (``()``: deleted); ``old`` empty
    inserts ``new`` before ``line``. ``eol="lf"`` instead converts every line end of the file to
    ``\\n``. Edits of one remedy apply in their order, each to the text the one before left."""

    path: str
    line: int = 0
    old: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    eol: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.eol is not None:
            return {"path": self.path, "eol": self.eol}
        return {"path": self.path, "line": self.line, "old": list(self.old), "new": list(self.new)}


@dataclass(frozen=True)
class Remedy:
    """A fix as data: the changes that make a finding go away (``envdoctor fix`` applies them).

    ``packages`` maps a distribution name to one exact version (never a bare name or a range);
    ``config_set`` / ``config_remove`` are GRPO config keys; ``env_set`` / ``env_unset``
    environment variables; ``launch`` is every line of the run as ``check`` takes them (the
    ``--launch`` lines first, the trainer's line last), or ``None`` when the launch stays;
    ``files`` edits of the files the run reads (``FileEdit``), in order.
    """

    packages: dict[str, str] = field(default_factory=dict)
    config_set: dict[str, Any] = field(default_factory=dict)
    config_remove: tuple[str, ...] = ()
    env_set: dict[str, str] = field(default_factory=dict)
    env_unset: tuple[str, ...] = ()
    launch: tuple[str, ...] | None = None
    files: tuple[FileEdit, ...] = ()
    fix: str = ""  # this remedy's own text, when a rule offers several (``alternatives``)

    @property
    def empty(self) -> bool:
        return (
            not (self.packages or self.config_set or self.config_remove or self.env_set or self.env_unset)
            and self.launch is None
            and not self.files
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``changes`` object of the fix format (docs/report.md); ``files`` only when the
        remedy edits a file (a key added within ``/1``)."""
        out: dict[str, Any] = {
            "packages": dict(self.packages),
            "config": {"set": dict(self.config_set), "remove": list(self.config_remove)},
            "env": {"set": dict(self.env_set), "unset": list(self.env_unset)},
            "launch": list(self.launch) if self.launch is not None else None,
        }
        if self.files:
            out["files"] = [e.to_dict() for e in self.files]
        return out


@dataclass(frozen=True)
class Finding:
    """One thing envdoctor found: what is wrong, and the exact fix.

    ``rule`` is the id of the rule (its documentation lives in ``rules/*.yaml``);
    ``evidence`` holds the facts that made it fire (shown with ``-v`` and in JSON); ``remedy``
    is ``fix`` as data, for ``envdoctor fix``; ``alternatives`` are the next candidates (each with
    its own ``fix`` text), tried in order when one does not hold (``envdoctor.remedy``).
    """

    rule: str
    severity: Severity
    message: str
    fix: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    remedy: Remedy | None = None  # the fix as data, where one is known
    alternatives: tuple[Remedy, ...] = ()  # further candidates, tried when ``remedy`` does not hold

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "fix": self.fix,
            "evidence": self.evidence,
        }
        if self.remedy is not None:
            out["remedy"] = self.remedy.to_dict()
        return out
