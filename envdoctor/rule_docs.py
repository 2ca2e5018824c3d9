"""Rule documentation as data: ``rules/<area>.yaml``, validated against one schema.

Below the rules, the report, triage and the commands, which all read it; importing it loads no
rule module (``envdoctor.checks.docs`` re-exports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor.findings import Severity
from envdoctor.resources import read_yaml, rules_dir

AREAS = {
    "packages": "Packages",
    "config": "GRPO config",
    "gpus": "GPUs",
    "layout": "GPU layout",
    "allocator": "Allocator",
    "data": "Data and rewards",
    "probe": "Probe",
    "triage": "Triage",
    "cluster": "Cluster",
}
REQUIRED = ("id", "name", "severity", "title", "why", "fix", "references")


@dataclass(frozen=True)
class RuleDoc:
    id: str
    name: str
    area: str
    severity: Severity
    title: str
    why: str
    fix: str
    references: tuple[str, ...]


class RuleDataError(Exception):
    """A file under rules/ does not match the schema (a bug in envdoctor's data)."""


def parse_area_file(data: Any, source: str) -> list[RuleDoc]:
    """Validate one area file and return its rules; raises ``RuleDataError``."""
    if not isinstance(data, dict) or data.get("area") not in AREAS:
        raise RuleDataError(f"{source}: 'area' must be one of {sorted(AREAS)}")
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        raise RuleDataError(f"{source}: 'rules' must be a non-empty list")
    docs = []
    for i, r in enumerate(rules):
        where = f"{source}: rules[{i}]"
        if not isinstance(r, dict):
            raise RuleDataError(f"{where}: expected a mapping")
        missing = [k for k in REQUIRED if not r.get(k)]
        if missing:
            raise RuleDataError(f"{where} ({r.get('id')}): missing {', '.join(missing)}")
        extra = set(r) - set(REQUIRED)
        if extra:
            raise RuleDataError(f"{where} ({r['id']}): unknown keys {sorted(extra)}")
        refs = r["references"]
        if not isinstance(refs, list) or not all(isinstance(x, str) and x for x in refs):
            raise RuleDataError(f"{where} ({r['id']}): references must be a list of strings")
        try:
            sev = Severity(r["severity"])
        except ValueError:
            raise RuleDataError(f"{where} ({r['id']}): bad severity {r['severity']!r}") from None
        docs.append(
            RuleDoc(
                id=str(r["id"]),
                name=str(r["name"]),
                area=data["area"],
                severity=sev,
                title=str(r["title"]).strip(),
                why=str(r["why"]).strip(),
                fix=str(r["fix"]).strip(),
                references=tuple(refs),
            )
        )
    return docs


@lru_cache(maxsize=1)
def rule_docs() -> dict[str, RuleDoc]:
    """All rule docs by id, from every ``rules/*.yaml``."""
    docs: dict[str, RuleDoc] = {}
    for path in sorted(rules_dir().glob("*.yaml")):
        data = read_yaml(path)
        for doc in parse_area_file(data, path.name):
            if doc.id in docs:
                raise RuleDataError(f"{path.name}: rule {doc.id} documented twice")
            docs[doc.id] = doc
    return docs
