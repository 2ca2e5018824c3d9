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
    from envdoctor.checks import import_all

    import_all()
    return RULES


def entry_of(rule_id: str) -> RuleEntry:
    """The registered rule ``rule_id``, its module imported first when it is not yet."""
    if rule_id not in RULES:
        import importlib

        from envdoctor.checks.rule_index import INDEX

        importlib.import_module(f"envdoctor.checks.{INDEX[rule_id][0]}")
    return RULES[rule_id]


def needs_of(rule_id: str) -> tuple[str, ...]:
    """What ``rule_id`` cannot run without: from the registry when its module is loaded, else
    from ``rule_index`` (so that a rule that cannot run does not load its module)."""
    if rule_id in RULES:
        return RULES[rule_id].needs
    from envdoctor.checks.rule_index import INDEX

    return INDEX[rule_id][1]


def rule_ids() -> list[str]:
    """Every rule's id, sorted, without importing the rule modules (``rule_index``, and any rule
    registered beside it)."""
    from envdoctor.checks.rule_index import INDEX

    return sorted(set(INDEX) | set(RULES))


def _words(items: tuple[str, ...]) -> str:
    return "(" + ", ".join(f'"{i}"' for i in items) + ("," if len(items) == 1 else "") + ")"


def index_text() -> str:
    """``envdoctor/checks/rule_index.py`` for the rules the decorators register now."""
    rows = "".join(
        f'    "{rule_id}": ("{entry.fn.__module__.rsplit(".", 1)[1]}", {_words(entry.needs)}),\n'
        for rule_id, entry in sorted(all_rules().items())
    )
    return (
        '"""Each rule\'s module and ``needs``: the engine judges whether a rule can run from here,\n'
        "so that a check imports only the rule modules with a rule that can run (with nothing given,\n"
        "the layout, memory and allocator rules' modules are not loaded). Written by\n"
        "``python -m envdoctor.checks.registry``; tests/checks/test_rule_index.py keeps it equal to\n"
        'the ``@rule`` decorators."""\n\n'
        "#: rule id -> (its module under envdoctor.checks, its needs)\n"
        f"INDEX: dict[str, tuple[str, tuple[str, ...]]] = {{\n{rows}}}\n"
    )


if __name__ == "__main__":
    from pathlib import Path

    from envdoctor.checks import registry  # this file run as __main__ is another module

    Path(__file__).with_name("rule_index.py").write_text(registry.index_text(), encoding="utf-8")
