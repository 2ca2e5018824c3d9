"""The data rules' own ids for the failures triage reads from the catalogue: an entry that says
``rule: DAT003`` (a tokenizer without a chat template) is the failure the data check names before
the run; triage reports it under that id, with the rule's title (the entry's) and fix, so that the
check, the probe and triage speak with one id."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from envdoctor.findings import Finding


def named(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` with each catalogue finding (TRI011) of a data rule's entry under that rule."""
    from envdoctor.triage import catalogue

    out = list(findings)
    if not any(f.rule == catalogue.RULE for f in out):
        return out
    entries = {e.id: e for e in catalogue.catalogue()[2].values()}
    for i, f in enumerate(out):
        entry = entries.get(str(f.evidence.get("known_failure"))) if f.rule == catalogue.RULE else None
        rule = str(getattr(entry, "rule", None) or "")
        if rule.startswith("DAT"):
            out[i] = replace(f, rule=rule)
    return out
