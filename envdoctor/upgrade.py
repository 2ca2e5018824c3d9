"""The smallest set of version changes that makes the training stack consistent.

Each conflict ("vllm 0.8.5 requires torch==2.6.0, installed 2.7.0") can be solved by moving the
required package, or, for vLLM, by moving vLLM to a release built for the installed torch
(rules/knowledge/vllm.yaml). Every combination is tried; the plan that leaves the fewest
conflicts with the fewest packages changed wins. Stacks have a handful of conflicts, so brute
force is exact and instant.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from envdoctor import versions
from envdoctor.checks.packages import CHECKED
from envdoctor.facts.interface import Facts, normalize_name
from envdoctor.facts.packages import extra_only, parse_requirement
from envdoctor.knowledge import Knowledge
from envdoctor.knowledge.requirements import marker_env, requirement_lines

MAX_CONFLICTS = 8


@dataclass(frozen=True)
class Conflict:
    source: str
    target: str
    spec: str


def _requirements(facts: Facts, extras: set[str], kb: Knowledge) -> list[Conflict]:
    env = marker_env(facts.python)  # the checked machine's Python, as PKG004
    out = []
    wanted = {normalize_name(e) for e in {""} | extras}
    for src in CHECKED:
        pkg = facts.packages.get(src)
        for line in requirement_lines(kb, src, pkg)[0] if pkg else []:
            only = extra_only(line)
            if only is not None and only not in wanted:
                continue  # as PKG004: a line for an extra not installed
            req = parse_requirement(line)
            if req is None:
                continue
            if req.marker is not None and not any(
                req.marker.evaluate({**env, "extra": e}) for e in {""} | extras
            ):
                continue
            if str(req.specifier):
                out.append(Conflict(src, normalize_name(req.name), str(req.specifier)))
    return out


def _broken(
    reqs: list[Conflict], installed: dict[str, str], changed: dict[str, str], kb: Knowledge
) -> list[Conflict]:
    bad = []
    for c in reqs:
        if c.source in changed:
            continue  # a new release of the source brings its own requirements
        have = changed.get(c.target, installed.get(c.target))
        if have is not None and versions.satisfies(have, c.spec) is False:
            bad.append(c)
    vllm = changed.get("vllm")
    torch = changed.get("torch", installed.get("torch"))
    if vllm and torch:  # a vLLM we move to must be built for the torch we end with
        pin = next((p["torch"] for p in kb.vllm.get("torch_pins", []) if p["vllm"] == vllm), None)
        if pin and versions.satisfies(torch, f"=={pin}") is False:
            bad.append(Conflict("vllm", "torch", f"=={pin}"))
    return bad


def _pinned(spec: str) -> str | None:
    return spec[2:] if spec.startswith("==") and "," not in spec else None


def _options(c: Conflict, installed: dict[str, str], kb: Knowledge) -> list[dict[str, str]]:
    opts = [{c.target: f"{c.spec}"}]
    if c.source == "vllm" and c.target == "torch":
        base = versions.parse(installed.get("torch"))
        builds = [
            p["vllm"] for p in kb.vllm.get("torch_pins", []) if base is not None and p["torch"] == base.public
        ]
        if builds:
            newest = max(builds, key=versions.sort_key)
            opts.append({"vllm": f"=={newest}"})
    return opts


def plan_upgrade(facts: Facts, kb: Knowledge, extras: set[str] | None = None) -> list[str]:
    """pip commands (usually one) that resolve every requirement conflict, or ``[]``."""
    installed = {n: p.version for n, p in facts.packages.items()}
    reqs = _requirements(facts, extras or set(), kb)
    conflicts = _broken(reqs, installed, {}, kb)[:MAX_CONFLICTS]
    if not conflicts:
        return []
    best: tuple[int, int, dict[str, str]] | None = None
    for choice in itertools.product(*(_options(c, installed, kb) for c in conflicts)):
        change: dict[str, str] = {}
        for opt in choice:
            for name, spec in opt.items():
                prev = change.get(name)
                change[name] = spec if prev is None or prev == spec else f"{prev},{spec}"
        concrete = {n: _pinned(s) or installed.get(n, "") for n, s in change.items()}
        left = len(_broken(reqs, installed, {n: v for n, v in concrete.items() if v}, kb))
        score = (left, len(change), change)
        if best is None or score[:2] < best[:2]:
            best = score
    assert best is not None
    return ["pip install " + " ".join(f"'{n}{s}'" for n, s in sorted(best[2].items()))]
