"""The fix closure: a remedy is printed only when, applied to a copy of the inputs, the rules
run again no longer find its finding and find no new error or warning.

``prove`` judges each finding's candidates on their own (what ``check`` prints);
``close`` applies one proved remedy after another, each computed against the inputs as the
fixes before it left them, until nothing more can be fixed, then applies their merged change to
the original inputs once more: that one round is the proof ``envdoctor fix`` reports.
Everything runs in-process on facts + plan: no file, no network, no probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.interface import Facts
from envdoctor.findings import Finding, Remedy, Severity
from envdoctor.plan.interface import Plan
from envdoctor.remedy.apply import apply, merge
from envdoctor.remedy.platform import accelerator_build, on_platform
from envdoctor.remedy.script_edit import said

#: rounds of ``close`` at most (each fixes one finding; a run has a handful)
MAX_ROUNDS = 24


@dataclass
class Rerun:
    """Runs the rules as the check did (same selection), without network or I/O."""

    select: list[str] | None = None
    ignore: list[str] | None = None
    runs: int = 0
    #: what the facts hold of the files a fix edited, read again from their edited texts (the
    #: hook's repository: its launch scripts, its requirement files); None: nothing to read again
    reread: Callable[[Facts, dict[str, str]], Facts] | None = None

    def __call__(self, facts: Facts, plan: Plan) -> list[Finding]:
        self.runs += 1
        if self.reread is not None and plan.edited:
            facts = self.reread(facts, plan.edited)
        ctx = Context(facts=facts, plan=plan, network=False)
        return run_rules(ctx, select=self.select, ignore=self.ignore).findings


def loud(finding: Finding) -> bool:
    return finding.severity is not Severity.INFO


def why_not(before: list[Finding], target: Finding, after: list[Finding]) -> str | None:
    """Why a remedy of ``target`` does not hold (None: it holds): the finding is still there,
    or a new error or warning is found. New: of ``target``'s rule, any message not found before
    (the same rule finding another problem); of another rule, more findings at that severity
    than before (a finding that only says the same thing in other words, as CFG002's batch once
    the launch has more ranks, is no new problem)."""
    if any(f.rule == target.rule and f.message == target.message for f in after):
        return f"it leaves {target.rule} as it is"
    was = {(f.rule, f.message): f.severity.rank for f in before if loud(f)}

    def count(found: list[Finding], rule: str, rank: int) -> int:
        return sum(1 for f in found if f.rule == rule and f.severity.rank >= rank)

    for f in after:
        if not loud(f) or was.get((f.rule, f.message), -1) >= f.severity.rank:
            continue
        rank = f.severity.rank
        if f.rule == target.rule or count(after, f.rule, rank) > count(before, f.rule, rank):
            return f"it would add {f.rule} ({f.severity.value}: {_short(f.message)})"
    return None


def _short(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def candidates(finding: Finding) -> list[Remedy]:
    return [finding.remedy, *finding.alternatives] if finding.remedy is not None else []


def _text(finding: Finding, remedy: Remedy) -> str:
    return remedy.fix or finding.fix


def prove(
    facts: Facts, plan: Plan, findings: list[Finding], rerun: Rerun, include_info: bool = True
) -> list[Finding]:
    """``findings`` with each remedy proved: a finding keeps the candidates that hold (its fix
    text is theirs); when none holds its fix says why, and it has no remedy."""
    tried: dict[str, tuple[Remedy | None, str]] = {}
    build = accelerator_build(facts)  # ROCm, XPU, Ascend: PyPI's CUDA wheels are no fix there
    out = []
    for finding in findings:
        cands = candidates(finding)
        if not cands or (not include_info and not loud(finding)):
            out.append(finding)
            continue
        held: list[Remedy] = []
        reasons: list[str] = []
        for cand in cands:
            key = f"{finding.rule}\0{finding.message}\0{cand!r}"
            if key not in tried:
                done, why = attempt((facts, plan), findings, finding, cand, rerun)
                tried[key] = (done[2] if done else None, why)
            holds, why = tried[key]
            if holds is not None:
                text = on_platform(holds.fix or _text(finding, cand), holds.packages, build)
                held.append(replace(holds, fix=text))
            else:
                reasons.append(f"`{_text(finding, cand)}`: {why}")
        out.append(_proved(finding, held, reasons))
    return out


State = tuple[Facts, Plan]


def attempt(
    state: State, findings: list[Finding], target: Finding, cand: Remedy, rerun: Rerun, lookahead: bool = True
) -> tuple[tuple[Facts, Plan, Remedy, list[Finding]] | None, str]:
    """``cand`` applied to ``state``: (the new state, the remedy as applied, its findings) when
    it holds, else None and why. A candidate that fixes ``target`` but brings new problems holds
    together with the remedies of those problems (one step of look-ahead: TRL 0.19.0 fixes one
    known failure and brings another that 0.19.1 fixes), when that pair adds nothing."""
    try:
        new_facts, new_plan, applied = apply(*state, cand)
        after = rerun(new_facts, new_plan)
    except Exception as exc:  # a remedy that cannot be applied is no fix; never a crash of check
        return None, f"it cannot be applied ({type(exc).__name__}: {_short(str(exc), 120)})"
    applied = _with_script(target, cand, applied)
    why = why_not(findings, target, after)
    if why is None:
        return (new_facts, new_plan, applied, after), ""
    if not lookahead or any(f.rule == target.rule and f.message == target.message for f in after):
        return None, why
    seen = {(f.rule, f.message) for f in findings}
    cur_state, cur, total, texts = (new_facts, new_plan), after, applied, [_text(target, cand)]
    for extra in [f for f in after if loud(f) and (f.rule, f.message) not in seen]:
        if not any(f.rule == extra.rule and f.message == extra.message for f in cur):
            continue  # gone with an earlier one
        for second in candidates(extra):
            try:
                f3, p3, a3 = apply(*cur_state, second)
                after3 = rerun(f3, p3)
            except Exception:  # noqa: BLE001 - not applicable: try the next
                continue
            if why_not(cur, extra, after3) is None:
                cur_state, cur, total = (f3, p3), after3, merge(total, a3)
                texts.append(_text(extra, second))
                break
        else:
            return None, why
    if why_not(findings, target, cur) is not None:
        return None, why
    only_packages = (
        total.packages
        and total.launch is None
        and not (total.config_set or total.config_remove or total.env_set or total.env_unset)
        and not total.files
    )
    pins = " ".join(f"'{n}=={v}'" for n, v in sorted(total.packages.items()))
    text = f"pip install {pins}" if only_packages else "; and ".join(dict.fromkeys(texts))
    return (cur_state[0], cur_state[1], replace(total, fix=text), cur), ""


def _with_script(finding: Finding, cand: Remedy, applied: Remedy) -> Remedy:
    """``applied`` with its fix text saying the script edits ``apply`` added (a key the script's
    GRPOConfig(...) sets, changed there too)."""
    extra = applied.files[len(cand.files) :]
    if not extra:
        return applied
    return replace(applied, fix=f"{applied.fix or _text(finding, cand)}; and in the script: {said(extra)}")


def _proved(finding: Finding, held: list[Remedy], reasons: list[str]) -> Finding:
    """The finding with the candidates that hold as its fix; the advice a rule gives for doing
    it by hand (``evidence["by_hand"]``: free a GPU, add one) stays beside them."""
    by_hand = str(finding.evidence.get("by_hand") or "")
    if held:
        texts = list(dict.fromkeys(_text(finding, r) for r in held))
        fix = "; or ".join([by_hand, *texts] if by_hand else texts)
        evidence = {**finding.evidence, "not_proved": "; ".join(reasons)} if reasons else finding.evidence
        return replace(finding, fix=fix, remedy=held[0], alternatives=tuple(held[1:]), evidence=evidence)
    why = "; ".join(reasons)
    fix = f"{by_hand} (no other fix holds: {why})" if by_hand else f"no fix envdoctor could prove: {why}"
    return replace(
        finding,
        fix=fix,
        remedy=None,
        alternatives=(),
        evidence={**finding.evidence, "unfixable": why},
    )


@dataclass
class Closure:
    """What ``close`` found: the merged change, the findings before and after it."""

    changes: Remedy
    before: list[Finding]
    after: list[Finding]
    facts: Facts
    plan: Plan
    fixed: list[str] = field(default_factory=list)
    unfixed: list[tuple[str, str]] = field(default_factory=list)
    one_round: bool = True  # the merged change, applied once to the inputs, gives ``after``
    steps: list[tuple[str, Remedy]] = field(default_factory=list)  # each fix: (rule, its change)


def close(
    facts: Facts,
    plan: Plan,
    rerun: Rerun,
    include_info: bool = False,
    before: list[Finding] | None = None,
    wanted: Callable[[Finding], bool] | None = None,
) -> Closure:
    """Fix what can be fixed, one proved remedy at a time (see the module docstring)."""
    wants = wanted or (lambda f: include_info or loud(f))
    findings = rerun(facts, plan) if before is None else before
    first = findings
    state = (facts, plan)
    total = Remedy()
    fixed: list[str] = []
    steps: list[tuple[str, Remedy]] = []
    blocked: dict[tuple[str, str], str] = {}
    for _ in range(MAX_ROUNDS):
        step = _one_fix(state, findings, rerun, wants, blocked)
        if step is None:
            break
        new_facts, new_plan, applied, after, rule = step
        state, findings = (new_facts, new_plan), after
        total = merge(total, applied)
        fixed.append(rule)
        steps.append((rule, applied))
    unfixed = [
        (f.rule, blocked.get((f.rule, f.message)) or _no_remedy(f))
        for f in findings
        if wants(f) and not f.evidence.get("left_out")
    ]
    one_round = True
    if not total.empty:
        try:
            f2, p2, _ = apply(facts, plan, total)
            again = rerun(f2, p2)
        except Exception:  # noqa: BLE001 - reported as not one round; `after` is the last state
            one_round = False
        else:
            one_round = _same(again, findings)
            state, findings = (f2, p2), again
    return Closure(total, first, findings, state[0], state[1], fixed, unfixed, one_round, steps)


def _same(a: list[Finding], b: list[Finding]) -> bool:
    return sorted((f.rule, f.severity.value, f.message) for f in a) == sorted(
        (f.rule, f.severity.value, f.message) for f in b
    )


def _no_remedy(finding: Finding) -> str:
    """Why a finding has no fix to apply: what only the user knows (``evidence["manual"]``, the
    constraint a rule names), and the fix to do by hand."""
    manual = finding.evidence.get("manual")
    if manual:
        return f"no fix envdoctor can apply: {manual} (by hand: {_short(finding.fix, 200)})"
    return f"no fix envdoctor can apply (the fix is manual: {_short(finding.fix, 200)})"


def _one_fix(
    state: tuple[Facts, Plan],
    findings: list[Finding],
    rerun: Rerun,
    wants: Callable[[Finding], bool],
    blocked: dict[tuple[str, str], str],
) -> tuple[Facts, Plan, Remedy, list[Finding], str] | None:
    """The first remedy, in the order of the findings (errors first), that holds."""
    order = sorted(findings, key=lambda f: -f.severity.rank)
    for finding in order:
        key = (finding.rule, finding.message)
        if not wants(finding) or key in blocked or not candidates(finding):
            continue
        reasons = []
        for cand in candidates(finding):
            done, why = attempt(state, findings, finding, cand, rerun)
            if done is not None:
                return done[0], done[1], done[2], done[3], finding.rule
            reasons.append(f"`{_text(finding, cand)}`: {why}")
        blocked[key] = "no fix holds: " + "; ".join(reasons)
    return None
