"""The one place that decides which TRL release TRL-dependent judgements use.

The memory plan (TRL's defaults: gradient checkpointing, fused log-probs, beta, lengths) and
the version-dependent rules (GRPOConfig keys, the bf16 default, the batch rule) all read
``trl_release(facts, kb)``:

- TRL installed (or a snapshot's, or ``--assume trl==X``, or a pin the repository declares):
  that release;
- a declared range: no one release (the DCL rules judge each release the range spans);
- nothing: the newest release the knowledge covers (``pip install trl`` installs the newest
  release; the knowledge covers it up to the last release read), marked as assumed so the
  report says so.

Findings that only the assumed release makes errors are warnings (``Context.on_trl``). The GPU
layout is the one exception: without TRL it reads the generation mode from the config's own
keys (``vllm_device`` → TRL 0.14–0.15's in-process vLLM), the config's evidence of the release it
was written for; with the newest release's defaults (colocate) otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envdoctor import versions

if TYPE_CHECKING:
    from envdoctor.facts.interface import Facts
    from envdoctor.knowledge import Knowledge


@dataclass(frozen=True)
class TrlRelease:
    """A TRL release and how it was found: ``installed`` (facts, snapshot, ``--assume``, a
    declared pin) or ``assumed`` (nothing installed or declared: see ``why``)."""

    version: str | None
    how: str = "installed"  # installed | named (--assume) | assumed | unknown (a declared range)
    why: str = ""

    @property
    def assumed(self) -> bool:
        return self.how == "assumed"

    def label(self) -> str:
        """``1.16.0`` or ``1.16.0 (assumed: …)`` for messages; past the knowledge horizon
        ``≤ 1.16.0 (newest known; 1.17.0 is newer than envdoctor knows)``: what a message says of
        a release envdoctor has not read comes from the newest one it has."""
        if self.version is None:
            return "?"
        said = self.version
        if self.version:
            from envdoctor.knowledge import beyond_horizon

            past = beyond_horizon("trl", self.version)
            if past is not None:
                said = past.said().removeprefix("TRL ")
        if self.how == "named":  # --assume trl==X: nothing installed says so
            return f"{said} (assumed)"
        if self.assumed:
            return f"{self.version} (assumed: {self.why})"
        return said


def newest_known(kb: Knowledge) -> str | None:
    """The newest TRL release the knowledge covers: the first release of its newest line
    (``rules/knowledge/trl.yaml`` trl_lines)."""
    from packaging.version import Version

    return max(_line_starts(kb), key=Version, default=None)  # every start parses


def _line_starts(kb: Knowledge) -> list[str]:
    out = []
    for line in kb.trl.get("trl_lines") or []:
        s = versions.spec(str(line.get("trl", "")))
        low = next((i.version for i in s or () if i.operator == ">="), None) if s else None
        if low and versions.parse(low) is not None:
            out.append(low)
    return out


def trl_release(facts: Facts, kb: Knowledge) -> TrlRelease:
    """The TRL release judgements use for ``facts`` (see the module docstring)."""
    installed = facts.version("trl")
    if installed and versions.placeholder(installed):
        # installed, its release not recorded (``0+unknown``): no release's rules judge it
        return TrlRelease(None, "unknown", "installed, its release not recorded")
    if installed:
        named = "trl" in (facts.extra.get("assumed") or ())
        return TrlRelease(installed, "named", "--assume") if named else TrlRelease(installed)
    declared = ((facts.extra.get("declared") or {}).get("stack") or {}).get("trl")
    if declared is not None:  # a range (a pin is a package): the DCL rules judge its releases
        return TrlRelease(None, "unknown", "declared as a range")
    newest = newest_known(kb)
    if newest is None:
        return TrlRelease(None)
    return TrlRelease(newest, "assumed", "no TRL installed or declared; the newest release envdoctor knows")


def dev_build(version: str | None) -> tuple[str, str] | None:
    """For a development build of TRL X (``0.15.0.dev0``: TRL's main branch on its way to X, or a
    fork of it), a version just below X (to match the rules of the releases before X) and X; None
    for a release or a version that does not parse. Such a build may have any change made on the
    way to X, so a rule that differs between the two ends does not hold for it."""
    v = versions.parse(version)
    if v is None or v.dev is None:
        return None
    release = list(v.release) + [0] * (3 - len(v.release))
    major, minor, patch = release[:3]
    if patch:
        below = f"{major}.{minor}.{patch - 1}"
    elif minor:
        below = f"{major}.{minor - 1}.9999"
    elif major:
        below = f"{major - 1}.9999.9999"
    else:
        return None
    return below, f"{major}.{minor}.{patch}"
