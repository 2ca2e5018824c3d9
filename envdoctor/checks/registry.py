"""The rule registry: each rule is a plain function of a ``Context`` that yields ``Hit``s.

A rule module decorates its functions with ``@rule("LAY003", needs=...)``; the rule's text
(title, why, fix, references) lives in ``rules/<area>.yaml`` under the same id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from envdoctor.findings import Remedy, Severity

NEEDS = ("live", "gpus", "plan", "vllm", "model", "cuda", "trl-keys", "trl-layout", "trl-trainer")
# cuda: the run uses CUDA (engine.cuda_unused); trl-keys / trl-layout / trl-trainer: the rule's
# premise is TRL's GRPOTrainer reading GRPOConfig's keys / TRL's process layout / TRL's
# GRPOTrainer running the step: left out for a framework that breaks it (plan.framework)


@dataclass
class Hit:
    """What a rule yields: the specific message and fix; the engine adds id and severity."""

    message: str
    fix: str = ""
    severity: Severity | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    remedy: Remedy | None = None
    alternatives: tuple[Remedy, ...] = ()


def hit(
    message: str,
    fix: str = "",
    severity: Severity | str | None = None,
    remedy: Remedy | Sequence[Remedy] | None = None,
    **evidence: Any,
) -> Hit:
    """A rule's finding; ``remedy`` is its fix as data, or candidates in order of preference
    (each with its own ``fix`` text: the first that holds is printed)."""
    sev = Severity(severity) if isinstance(severity, str) else severity
    if isinstance(remedy, Sequence):
        first, rest = (remedy[0], tuple(remedy[1:])) if remedy else (None, ())
        return Hit(message, fix, sev, evidence, first, rest)
    return Hit(message=message, fix=fix, severity=sev, evidence=evidence, remedy=remedy)


RuleFn = Callable[[Any], Iterable[Hit]]


@dataclass(frozen=True)
class RuleEntry:
    id: str
    fn: RuleFn
    needs: tuple[str, ...]


RULES: dict[str, RuleEntry] = {}


def rule(rule_id: str, needs: tuple[str, ...] = ()) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn`` as the check of ``rule_id``; ``needs`` lists what it cannot run without."""
    unknown = set(needs) - set(NEEDS)
    if unknown:
        raise ValueError(f"{rule_id}: unknown needs {sorted(unknown)}")

    def register(fn: RuleFn) -> RuleFn:
        if rule_id in RULES:
            raise ValueError(f"rule {rule_id} registered twice")
        RULES[rule_id] = RuleEntry(rule_id, fn, tuple(needs))
        return fn

    return register


def all_rules() -> dict[str, RuleEntry]:
    """Every registered rule (importing the rule modules registers them)."""
    from envdoctor.checks import ALL_MODULES  # noqa: F401  (import for registration)

    return RULES
