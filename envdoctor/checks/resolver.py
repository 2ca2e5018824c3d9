"""One consistent assignment of exact package versions for the training stack (issue 35 item 4).

The constraints are everything envdoctor knows about versions: each installed package's
``Requires-Dist`` at its installed version (as PKG004 reads them), TRL's vLLM range per release
(PKG006, rules/knowledge/trl.yaml), vLLM's torch pin and transformers bounds per release
(vllm.yaml ``torch_pins``), the known-failures catalogue's broken pairs and fixed releases whose
config / launch / environment conditions hold for this run, vllm.yaml's ``known_bad`` pairs, the
repository's declared ranges, and what the caller requires. The candidates of a package are the
releases envdoctor knows (vLLM's pinned releases, TRL's scanned tags, the torch releases vLLM
pins, every exact bound a specifier names, ``fixed_in`` releases, the horizon's newest) and the
installed one.

resolvelib (the core of pip's resolver) finds an assignment; this module is its provider and
asks for the nearest one to what is installed: fewest packages moved (each size of the set of
packages allowed to move is tried in turn, smallest first), then the smallest moves (a
candidate that keeps its requirements' installed versions first, then the nearest release
series, newest patch first). resolvelib is imported only when the installed stack breaks a
constraint, so a healthy ``check`` never loads it.

Public: ``plan_packages(ctx, require=None) -> PackagePlan`` (cached per context).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.facts.interface import normalize_name
from envdoctor.facts.packages import extra_only, parse_requirement
from envdoctor.findings import Remedy
from envdoctor.knowledge.requirements import (  # noqa: F401  (SOURCES, VLLM_FLOOR: read from here too)
    SOURCES,
    VLLM_FLOOR,
    api_floor,
    marker_env,
    requirement_lines,
)

#: packages the knowledge itself pins (a vLLM's torch and transformers, a TRL line's requirements)
_KNOWN_TARGETS = ("torch", "transformers", "accelerate", "datasets", "huggingface-hub", "torchvision")
#: resolutions tried while looking for the fewest moves (each is a few milliseconds)
MAX_TRIES = 60
#: torch's companion wheel: torchvision 0.(m+15).p is built for torch 2.m.p (its Requires-Dist pins
#: it, read for 0.25.0-0.29.0; https://github.com/pytorch/vision#installation). Only for the torch
#: releases vLLM pins (the newest torch may have no torchvision yet). torchaudio stopped
#: following torch after 2.11 and is not in the stack PKG004 reads.
_COMPANIONS = {"torchvision": 15}


@dataclass(frozen=True)
class Need:
    """A constraint on one package: its version is in ``spec`` and not in ``forbid``."""

    name: str
    spec: str = ""
    forbid: str = ""
    why: str = ""  # who asks: "trl 1.16.0", "known failure <id>", "--require"

    def allows(self, version: str) -> bool:
        return _allows(self.spec, self.forbid, version)

    def text(self) -> str:
        what = self.spec or ""
        if self.forbid:
            what += (", " if what else "") + f"not {self.forbid}"
        return f"{self.name} {what or 'any version'}" + (f" ({self.why})" if self.why else "")


_ALLOWS: dict[tuple[str, str, str], bool] = {}


def _allows(spec: str, forbid: str, version: str) -> bool:
    """Whether ``version`` is in ``spec`` and not in ``forbid`` (memoised: the resolver asks the
    same few hundred questions thousands of times)."""
    key = (spec, forbid, version)
    found = _ALLOWS.get(key)
    if found is None:
        found = not (spec and versions.satisfies(version, spec) is False) and not (
            forbid and versions.satisfies(version, forbid) is True
        )
        if len(_ALLOWS) > 100_000:
            _ALLOWS.clear()
        _ALLOWS[key] = found
    return found


@dataclass(frozen=True)
class Candidate:
    name: str
    version: str


@dataclass(frozen=True)
class PackagePlan:
    """The package changes that satisfy every known constraint, nearest to what is installed.

    ``changes``: name -> exact version, only the packages that move (or get installed);
    ``before``: each changed name's version now (None: not installed); ``unfixable``: why no
    assignment exists ('' when one does: ``changes`` empty then means nothing to change).
    """

    changes: dict[str, str] = field(default_factory=dict)
    before: dict[str, str | None] = field(default_factory=dict)
    unfixable: str = ""

    @property
    def command(self) -> str:
        """One pip line (``''`` when nothing changes)."""
        if not self.changes:
            return ""
        return "pip install " + " ".join(f"'{n}=={v}'" for n, v in sorted(self.changes.items()))

    def remedy(self) -> Remedy:
        return Remedy(packages=dict(sorted(self.changes.items())))

    def moves(self) -> str:
        """``vllm 0.33.0 → 0.30.0, torch 2.15.0 → 2.13.0`` for messages."""
        return ", ".join(
            f"{n} {self.before.get(n) or '(not installed)'} → {v}" for n, v in self.changes.items()
        )


class Stack:
    """The provider's view of the stack: what is installed, what is in play, and the knowledge."""

    def __init__(self, ctx: Context, require: Mapping[str, str] | None = None, advice: bool = False) -> None:
        self.ctx, self.kb = ctx, ctx.kb
        self.advice = advice  # vllm.yaml's warning-level known_bad pairs avoided too
        facts = ctx.facts
        self.use_vllm = bool(ctx.plan.use_vllm)
        self.installed = {
            normalize_name(n): p.version for n, p in facts.packages.items() if versions.parse(p.version)
        }
        self.env = marker_env(facts.python)
        self.python = self.env.get("python_full_version", "") if facts.python else ""
        self.roots: list[Need] = [Need(n, why=f"{n} {v} installed") for n, v in self.installed.items()]
        script = ctx.plan.script
        in_process = script.vllm_in_process if script is not None and not script.problem else None
        if (self.use_vllm or in_process) and "vllm" not in self.installed and not facts.unknown("vllm"):
            # TRL's vLLM (use_vllm), or the one the script starts in its own process (Unsloth's
            # fast_inference=True): either needs a vLLM built for this torch
            why = "use_vllm is on" if self.use_vllm else f"{in_process} starts vLLM in the training process"
            self.roots.append(Need("vllm", f">={VLLM_FLOOR}", why=why))
        if (
            "trl" not in self.installed
            and not facts.unknown("trl")
            and (ctx.config or ctx.plan.trainer)
            and "declared" not in facts.extra
        ):
            self.roots.append(Need("trl", why="the GRPO run imports TRL"))
        for name, e in ((facts.extra.get("declared") or {}).get("stack") or {}).items():
            if normalize_name(name) == "python":
                continue  # requires-python: the interpreter, not a package pip installs
            if not getattr(e, "version", None) and getattr(e, "spec", None):
                self.roots.append(Need(normalize_name(name), str(e.spec), why="declared"))
        for name, spec in (require or {}).items():
            self.roots.append(Need(normalize_name(name), spec, why="required"))
        kept = self._config_keys_kept(ctx)
        if kept is not None:
            self.roots.append(kept)
        from envdoctor.checks.model_floors import model_names, transformers_floor

        floor = transformers_floor(ctx, self.installed.get("transformers"))
        if floor is not None:
            self.roots.append(Need("transformers", floor[0], why=floor[1]))
        for dist, name, kind, found in model_names(ctx):
            # the model's config.json needs the release that first has its name (PKG010): no plan
            # may move below it
            self.roots.append(
                Need(dist, f">={found.first}", why=f"the model's config.json names {kind} {name}")
            )
        self.in_play = set(self.installed) | {r.name for r in self.roots}
        # only what a constraint can touch: the stack's sources, what they require, the packages
        # the knowledge pins; other installed distributions stay out of the search
        from envdoctor.knowledge import checkable_failures

        named = {n for f in checkable_failures() for n in f.packages}  # the catalogue's pairs
        touched = {n for n in self.installed if n in SOURCES or n in _KNOWN_TARGETS or n in named}
        for src in list(touched):
            touched |= {need.name for need in self._needs(src, self.installed[src], False)}
        self.in_play = (touched & set(self.installed)) | {
            r.name for r in self.roots if r.name not in self.installed
        }
        self.in_play |= {r.name for r in self.roots if r.spec}
        self.roots = [r for r in self.roots if r.name in self.in_play]
        self._failures_found: tuple[list[tuple[str, dict[str, str]]], list[Need]] | None = None
        self._known: dict[str, list[str]] = {}
        self._deps: dict[tuple[str, str, bool], list[Need]] = {}
        self._order: dict[tuple[str, bool, bool], list[str]] = {}

    # --- the known failures as constraints --------------------------------------------------

    @property
    def pairs(self) -> list[tuple[str, dict[str, str]]]:
        """Broken combinations of two or more packages (read on first use)."""
        return self._known_failures()[0]

    @property
    def banned(self) -> list[Need]:
        """Broken releases of one package (read on first use)."""
        return self._known_failures()[1]

    def _known_failures(self) -> tuple[list[tuple[str, dict[str, str]]], list[Need]]:
        if self._failures_found is None:
            self._failures_found = self._failures()
        return self._failures_found

    def consistent_now(self) -> bool:
        """Whether the installed stack breaks nothing: requirements and ranges checked here, the
        known failures as KNF001 matches them (its package conditions first: no launch or
        config condition is judged for a failure whose versions are not installed)."""
        from envdoctor.checks.matching import matching

        if self.broken(self.installed, failures=False):
            return False
        if any(len(f.packages) >= 2 or f.fixed_in for f in matching(self.ctx)):
            return False
        return not any(_holds(self.ctx, bad) for bad in self.kb.vllm.get("known_bad") or [])

    def _failures(self) -> tuple[list[tuple[str, dict[str, str]]], list[Need]]:
        """Broken combinations whose other conditions hold here: a failure of two or more
        packages (a broken pair) or with a release that fixes it. One package: banned range."""
        from envdoctor.checks.matching import matches
        from envdoctor.knowledge import checkable_failures

        found: list[tuple[str, dict[str, str]]] = []
        for f in checkable_failures():
            if f.rule is not None or f.triage_only or not (len(f.packages) >= 2 or f.fixed_in):
                continue
            if f.depends_on != "run" and not f.fixed_in and not self.advice:
                continue  # a pair that breaks only with what envdoctor cannot see (how flash-attn was built)
            if matches(self.ctx, dataclasses.replace(f, packages={})):
                found.append((f"known failure {f.id}", dict(f.packages)))
        for bad in self.kb.vllm.get("known_bad") or []:
            when = bad.get("when") or {}
            if bad.get("rule") or not when or (bad.get("severity", "error") != "error" and not self.advice):
                continue
            pkgs = {k: str(v) for k, v in when.items() if not _condition_key(k)}
            if pkgs and _holds(self.ctx, bad, versions=False, advice=self.advice):
                found.append((f"known-bad combination {bad.get('id')}", pkgs))
        pairs, banned = [], []
        for why, pkgs in found:
            pkgs = {normalize_name(n): s for n, s in pkgs.items()}
            if not set(pkgs) <= self.in_play:
                continue  # a package of it is not in this stack: it cannot happen
            if len(pkgs) == 1:
                ((name, spec),) = pkgs.items()
                banned.append(Need(name, forbid=spec, why=why))
            else:
                pairs.append((why, pkgs))
        return pairs, banned

    # --- candidates -----------------------------------------------------------------------

    def known(self, name: str) -> list[str]:
        """Every release of ``name`` envdoctor knows, oldest first (the installed one too)."""
        if name not in self._known:
            self._known[name] = sorted(set(self._releases(name)), key=versions.sort_key)
        return self._known[name]

    def _config_keys_kept(self, ctx: Context) -> Need | None:
        """The TRL releases that still take every config key the installed TRL takes (a fix
        that moves TRL must not make the config's own keys unknown: CFG001); None when TRL is
        not installed (or only declared: the hook) or no key bounds it."""
        from envdoctor.checks.config import NOT_CONFIG

        trl = self.installed.get("trl")
        keys = self.kb.grpo_keys.get("keys") or {}
        if not trl or not keys or "declared" in ctx.facts.extra:
            return None  # (a declared stack's plan: DCL001 judges its range against the keys)
        low: str | None = None
        high: str | None = None
        for key, origin in ctx.plan.config_origin.items():
            entry = keys.get(key)
            if entry is None or key in NOT_CONFIG or entry.get("overrides_training_arguments"):
                continue
            if ctx.plan.not_grpo_key(key, origin):
                continue
            since, until = entry.get("since"), entry.get("until")
            since, until = (str(since) if since else None), (str(until) if until else None)
            if (since and versions.below(trl, since)) or (until and versions.at_least(trl, until)):
                continue  # not taken now: CFG001 says so, and its fix is the key's, not this bound
            if since and (low is None or versions.at_least(since, low)):
                low = since
            if until and (high is None or versions.below(until, high)):
                high = until
        spec = ",".join(p for p in (f">={low}" if low else "", f"<{high}" if high else "") if p)
        return Need("trl", spec, why="the config's keys the installed TRL takes") if spec else None

    def _releases(self, name: str) -> Iterator[str]:
        from envdoctor.knowledge import horizon

        if name in self.installed:
            yield self.installed[name]
        pins = self.kb.vllm.get("torch_pins") or []
        if name == "vllm":
            yield from (str(p["vllm"]) for p in pins)
            return
        if name == "torch":
            yield from (str(p["torch"]) for p in pins)
        if name == "trl":  # the newest patch of each series (others come in where a constraint names them)
            tags = sorted(map(str, self.kb.grpo_keys.get("tags_scanned") or []), key=versions.sort_key)
            yield from {_series(t): t for t in tags}.values()
        if name in _COMPANIONS:
            yield from (c for p in pins if (c := _companion(name, str(p["torch"]))))
        newest = (horizon(self.kb).get(name) or {}).get("newest")
        if newest:
            yield str(newest)
        for spec in self._specs_naming(name):
            for part in spec.split(","):
                part = part.strip()
                if part[:2] in (">=", "==", "<=", "~=") and "*" not in part:
                    v = part[2:].strip()
                    parsed = versions.parse(v)
                    # a bound is a candidate; a pre-release one only where it is pinned (``==``): a
                    # range's lower end (``transformers>=5.0.0rc0``) is no release to advise
                    if parsed is not None and (not parsed.is_prerelease or part[:2] == "=="):
                        yield v

    def _specs_naming(self, name: str) -> Iterator[str]:
        for r in self.roots:
            if r.name == name and r.spec:
                yield r.spec
        for _why, pkgs in self.pairs:
            if name in pkgs:
                yield pkgs[name]
        for f in self._fixed_in():
            if name in f:
                yield "==" + f[name]
        for p in self.kb.vllm.get("torch_pins") or []:
            if name == "transformers" and p.get("transformers"):
                yield str(p["transformers"])
        for line in self.kb.trl.get("trl_lines") or []:
            req = (line.get("requires") or {}).get(name)
            if req:
                yield str(req)
        for src in self.installed:
            for need in self.needs(src, self.installed[src]):
                if need.name == name and need.spec:
                    yield need.spec

    def _fixed_in(self) -> list[dict[str, str]]:
        from envdoctor.knowledge import checkable_failures

        return [f.fixed_in for f in checkable_failures() if f.fixed_in]

    def allowed(self, name: str, version: str, failures: bool = True) -> bool:
        if failures and any(n.name == name and not n.allows(version) for n in self.banned):
            return False
        if name == "vllm":
            if versions.below(version, VLLM_FLOOR) and "trl" in self.in_play:
                return False  # PKG002
            pin = self._pin(version)
            rp = str((pin or {}).get("requires_python") or "")
            if rp and self.python and versions.satisfies(self.python, rp) is False:
                return False
        return True

    def _pin(self, vllm: str) -> dict[str, Any] | None:
        base = versions.parse(vllm)
        if base is None:
            return None
        return next(
            (p for p in self.kb.vllm.get("torch_pins") or [] if versions.parse(str(p["vllm"])) == base),
            None,
        )

    # --- requirements ---------------------------------------------------------------------

    def needs(self, name: str, version: str, failures: bool = True) -> list[Need]:
        """What ``name`` at ``version`` requires of the other packages in play (``failures``:
        with the known failures' exclusions)."""
        key = (name, version, failures)
        if key not in self._deps:
            self._deps[key] = [n for n in self._needs(name, version, failures) if n.name in self.in_play]
        return self._deps[key]

    def _needs(self, name: str, version: str, failures: bool) -> Iterator[Need]:
        who = f"{name} {version}"
        pkg = self.ctx.facts.packages.get(name)
        if pkg is not None and self.installed.get(name) == version and name in SOURCES:
            yield from self._requires_dist(name, pkg, who)
        elif name == "vllm":
            pin = self._pin(version)
            if pin is not None:
                yield Need("torch", f"=={pin['torch']}", why=f"{who} is built for it")
                if pin.get("transformers"):
                    yield Need("transformers", str(pin["transformers"]), why=f"{who} requires")
        elif name == "trl":
            line = self.kb.trl_line(version) or {}
            for target, spec in (line.get("requires") or {}).items():
                yield Need(normalize_name(target), str(spec), why=f"{who} requires")
        elif name in _COMPANIONS:
            torch = _torch_of(name, version)
            if torch:
                yield Need("torch", f"=={torch}", why=f"{who} is built for it")
        yield from self._api_floors(name, version, who)
        if name == "trl" and (self.use_vllm or "vllm" in self.installed):
            # TRL imports an installed vLLM (and warns outside its range from 0.24) even with
            # use_vllm off; its API breaks are in the known-failures catalogue
            line = self.kb.trl_line(version) or {}
            if line.get("vllm"):
                yield Need("vllm", str(line["vllm"]), why=f"TRL {version} supports it for GRPO")
        for why, pkgs in self.pairs if failures else []:
            if name in pkgs and versions.satisfies(version, pkgs[name]) is True:
                others = [(n, s) for n, s in pkgs.items() if n != name]
                if len(others) == 1:  # three-way failures are checked on the result (_breaks)
                    yield Need(others[0][0], forbid=others[0][1], why=f"{why}, with {who}")

    def _api_floors(self, name: str, version: str, who: str) -> Iterator[Need]:
        """The API floors ``name`` at ``version`` sets on what it imports without declaring it
        (rules/knowledge/requirement_floors.yaml: TRL 0.29-1.13's torch>=2.6.0, PKG004)."""
        floors = (self.kb.requirement_floors.get("floors") or {}).get(name) or {}
        for target in (t for t in floors if t != "releases" and t in self.in_play):
            floor = api_floor(self.kb, name, version, target, strict=False)
            if floor is not None:
                yield Need(target, f">={floor}", why=f"{who} imports {target} {floor}'s API")

    def _requires_dist(self, name: str, pkg: Any, who: str) -> Iterator[Need]:
        lines, _curated = requirement_lines(self.kb, name, pkg)
        extras = {""} | ({"vllm"} if name == "trl" and self.use_vllm else set())
        for line in lines:
            only = extra_only(line)
            if only is not None and only not in extras:
                continue
            req = parse_requirement(line)
            if req is None or not str(req.specifier):
                continue
            if req.marker is not None and not any(
                req.marker.evaluate({**self.env, "extra": e}) for e in extras
            ):
                continue
            yield Need(normalize_name(req.name), str(req.specifier), why=f"{who} requires")

    # --- judging an assignment --------------------------------------------------------------

    def broken(self, assignment: Mapping[str, str], failures: bool = True) -> list[Need]:
        """The constraints ``assignment`` breaks (empty: consistent); ``failures``: the known
        failures' too."""
        out = [r for r in self.roots if r.name not in assignment or not r.allows(assignment[r.name])]
        for name, version in assignment.items():
            if not self.allowed(name, version, failures):
                out.append(Need(name, why=f"{name} {version} is excluded"))
            for need in self.needs(name, version, failures):
                have = assignment.get(need.name)
                if have is not None and not need.allows(have):
                    out.append(need)
        for why, pkgs in self.pairs if failures else []:
            if all(versions.satisfies(assignment.get(n), s) is True for n, s in pkgs.items()):
                out.append(Need(next(iter(pkgs)), why=why))
        return out

    def distance(self, name: str, version: str) -> tuple[int, Any]:
        """How far ``version`` is from the installed one: release series apart, then newer first."""
        have = self.installed.get(name)
        v = versions.sort_key(version)
        if have is None:
            return (0, _neg(v))
        series = sorted({_series(x) for x in self.known(name)})
        a, b = _series(have), _series(version)
        apart = abs(series.index(a) - series.index(b)) if a in series and b in series else 99
        return (apart, _neg(v))

    def ordered(self, name: str, movable: bool, spare: bool = True) -> list[str]:
        """The candidates of ``name`` in the order they are tried: the installed one, then (with
        ``spare``) those whose requirements keep the other installed versions, nearest first."""
        key = (name, movable, spare)
        if key not in self._order:
            self._order[key] = self._ordered(name, movable, spare)
        return self._order[key]

    def _ordered(self, name: str, movable: bool, spare: bool) -> list[str]:
        have = self.installed.get(name)
        if not movable and have is not None:
            return [have]
        rest = [v for v in self.known(name) if v != have and self.allowed(name, v)]

        def cost(v: str) -> tuple[int, tuple[int, Any]]:
            clash = (
                sum(
                    1
                    for n in self.needs(name, v)
                    if n.name in self.installed and not n.allows(self.installed[n.name])
                )
                if spare
                else 0
            )
            return clash, self.distance(name, v)

        return ([have] if have is not None and self.allowed(name, have) else []) + sorted(rest, key=cost)


def _condition_key(key: str) -> bool:
    return key in ("use_vllm", "vllm_mode", "world_size_above") or key.startswith(("config.", "env."))


def _holds(ctx: Context, bad: dict[str, Any], versions: bool = True, advice: bool = False) -> bool:
    """Whether a vllm.yaml ``known_bad`` entry that PKG007 reports as an error holds
    (``versions``: its version conditions too)."""
    from envdoctor.checks.matching import when_holds

    when = bad.get("when") or {}
    if bad.get("rule") or not when or (bad.get("severity", "error") != "error" and not advice):
        return False  # another rule's, or advice (a warning to watch for): no package must move
    return when_holds(ctx, {k: v for k, v in when.items() if versions or _condition_key(k)})


def _series(version: str) -> tuple[int, ...]:
    v = versions.parse(version)
    return tuple(v.release[:2]) if v is not None else ()


class _Neg:
    """Reverses the order of a version (newest first inside a sort key)."""

    def __init__(self, v: versions.Version) -> None:
        self.v = v

    def __lt__(self, other: _Neg) -> bool:
        return other.v < self.v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Neg) and other.v == self.v

    def __hash__(self) -> int:
        return hash(self.v)


def _neg(v: versions.Version) -> _Neg:
    return _Neg(v)


def _companion(name: str, torch: str) -> str | None:
    """The ``name`` release built for ``torch`` (``_COMPANIONS``)."""
    v = versions.parse(torch)
    if v is None or len(v.release) < 3 or v.release[0] != 2:
        return None
    return f"0.{v.release[1] + _COMPANIONS[name]}.{v.release[2]}"


def _torch_of(name: str, version: str) -> str | None:
    """The torch release the ``name`` release ``version`` is built for."""
    v = versions.parse(version)
    if v is None or len(v.release) < 3 or v.release[0] != 0:
        return None
    return f"2.{v.release[1] - _COMPANIONS[name]}.{v.release[2]}"


# --- resolvelib ---------------------------------------------------------------------------


class Unresolvable(Exception):
    """No assignment satisfies the constraints; the message names the ones that clash."""


def _resolve(stack: Stack, movable: set[str], spare: bool) -> dict[str, str]:
    from resolvelib import AbstractProvider, BaseReporter, Resolver
    from resolvelib.resolvers import ResolutionImpossible, ResolutionTooDeep

    class Provider(AbstractProvider[Need, Candidate, str]):
        def identify(self, requirement_or_candidate: Need | Candidate) -> str:
            return requirement_or_candidate.name

        def get_preference(self, identifier: str, *args: Any, **kwargs: Any) -> Any:
            # what cannot move first, then the most constrained (fewest candidates)
            return (identifier in movable, len(stack.known(identifier)), identifier)

        def find_matches(
            self, identifier: str, requirements: Mapping[str, Iterator[Need]], incompatibilities: Any
        ) -> list[Candidate]:
            asks = {(r.spec, r.forbid) for r in requirements[identifier]}  # many parents, few ranges
            bad = {c.version for c in incompatibilities[identifier]}
            return [
                Candidate(identifier, v)
                for v in stack.ordered(identifier, identifier in movable, spare)
                if v not in bad and all(_allows(spec, forbid, v) for spec, forbid in asks)
            ]

        def is_satisfied_by(self, requirement: Need, candidate: Candidate) -> bool:
            return requirement.allows(candidate.version)

        def get_dependencies(self, candidate: Candidate) -> list[Need]:
            return stack.needs(candidate.name, candidate.version)

    try:
        result = Resolver(Provider(), BaseReporter()).resolve(stack.roots, max_rounds=500)
    except ResolutionImpossible as exc:
        raise Unresolvable(_why(stack, exc.causes)) from None
    except ResolutionTooDeep:
        raise Unresolvable("the resolver gave up after 500 rounds") from None
    found = {name: c.version for name, c in result.mapping.items()}
    left = stack.broken(found)
    if left:  # a three-way known failure: its pairs are not constraints of the resolver
        raise Unresolvable("; ".join(n.text() for n in left))
    return found


def _why(stack: Stack, causes: Iterable[Any]) -> str:
    """The clashing constraints resolvelib ended on, one line per package (at most three of
    each: a long list is the same fact for many releases)."""
    by: dict[str, dict[str, list[str]]] = {}
    for cause in causes:
        need: Need = cause.requirement
        what = need.spec + (f", not {need.forbid}" if need.forbid else "") or "any version"
        by.setdefault(need.name, {}).setdefault(what, []).append(need.why)
    parts = []
    for name, specs in by.items():
        known = stack.known(name)
        said = "; ".join(
            f"{what} ({', '.join(whys[:3])}{' …' if len(whys) > 3 else ''})" for what, whys in specs.items()
        )
        span = f" ({known[0]} … {known[-1]})" if known else ""
        parts.append(f"no {name} release envdoctor knows{span} satisfies {said}")
    return "; ".join(parts)


def _changes(stack: Stack, found: Mapping[str, str]) -> dict[str, str]:
    return {n: v for n, v in sorted(found.items()) if stack.installed.get(n) != v}


def _score(stack: Stack, changes: Mapping[str, str]) -> tuple[int, int, tuple[str, ...]]:
    apart = sum(stack.distance(n, v)[0] for n, v in changes.items())
    return (len(changes), apart, tuple(sorted(changes)))


#: Packages kept while any assignment keeps them: the run's config and code are written against
#: the installed TRL (its GRPOConfig keys, defaults and trainer API differ by release), while
#: vLLM, torch and transformers sit below the user's code.
ANCHORS = ("trl",)


def _nearest(stack: Stack, pinned: set[str]) -> dict[str, str]:
    """The fewest changes with ``pinned`` kept: each size of the set of packages allowed to move,
    smallest first (the first assignment found with every package free bounds the sizes)."""
    must = {r.name for r in stack.roots if r.name not in stack.installed}
    free = sorted(n for n in stack.in_play - must - pinned if len(stack.known(n)) > 1)
    best = _changes(stack, _resolve(stack, must | set(free), spare=True))
    tries = 0
    for size in range(0, len(best) - len(must) + 1):
        found: list[dict[str, str]] = [best] if len(best) == size + len(must) else []
        for subset in itertools.combinations(free, size):
            tries += 1
            if tries > MAX_TRIES:
                break
            try:
                found.append(_changes(stack, _resolve(stack, must | set(subset), spare=False)))
            except Unresolvable:
                continue
        if found:
            return min(found, key=lambda c: _score(stack, c))
    return best


def _solve(stack: Stack, explain: bool = True) -> PackagePlan:
    if stack.consistent_now():
        return PackagePlan()
    anchored = {a for a in ANCHORS if a in stack.installed}
    why = ""
    for pinned in ([anchored] if anchored else []) + [set()]:
        try:
            best = _nearest(stack, pinned)
        except Unresolvable as exc:
            why = str(exc)
            continue
        return PackagePlan(changes=best, before={n: stack.installed.get(n) for n in best})
    return PackagePlan(unfixable=(_culprit(stack) if explain else "") or why)


def _culprit(stack: Stack) -> str:
    """The hard constraint (required, declared, use_vllm) without which the stack resolves."""
    for root in stack.roots:
        if not root.spec or root.name in stack.installed and root.why.endswith("installed"):
            continue
        rest = Stack.__new__(Stack)
        rest.__dict__.update(stack.__dict__)
        rest.roots = [r for r in stack.roots if r is not root]
        rest._order, rest._deps = {}, {}
        try:
            without = _changes(rest, _resolve(rest, set(rest.in_play), spare=True))
        except Unresolvable:
            continue
        plan = PackagePlan(changes=without)
        return (
            f"{root.text()} cannot hold with what envdoctor knows of the other packages"
            + _torch_detail(stack, root)
            + (f" (without it: {plan.command})" if without else "")
        )
    return ""


def _torch_detail(stack: Stack, root: Need) -> str:
    """For a torch that cannot hold with vLLM: the torch releases vLLM is built for, within the
    installed TRL's range."""
    if root.name != "torch" or "vllm" not in stack.in_play:
        return ""
    trl = stack.installed.get("trl")
    rng = str((stack.kb.trl_line(trl) or {}).get("vllm") or "") if trl else ""
    fits = [v for v in stack.known("vllm") if not rng or versions.satisfies(v, rng)]
    torches = sorted({str(p["torch"]) for v in fits if (p := stack._pin(v))}, key=versions.sort_key)
    if not fits or not torches:
        return ""
    where = f" (TRL {trl}'s range)" if rng else ""
    return f": vLLM {fits[0]} … {fits[-1]}{where} are built for torch " + (
        torches[0] if len(torches) == 1 else f"{torches[0]} … {torches[-1]}"
    )


def plan_packages(
    ctx: Context, require: Mapping[str, str] | None = None, explain: bool = True
) -> PackagePlan:
    """The package plan for ``ctx`` (extra ``require``: name -> PEP 440 specifier that must
    hold, e.g. ``{"torch": "==2.9.0"}`` to keep torch), cached on the context (build a new
    context after changing its facts or plan). ``explain``: when nothing resolves, find the
    constraint without which it would (a few more resolutions; alternatives skip it)."""
    memo: dict[Any, PackagePlan] = ctx.__dict__.setdefault("_package_plans", {})
    key = (tuple(sorted((require or {}).items())), explain)
    if key not in memo:
        # first a plan that also avoids the known-bad pairs PKG007 warns of (a fix must add no
        # warning to be printed: envdoctor.remedy); where none resolves, one that need not
        plan = _solve(Stack(ctx, require, advice=True), explain=False)
        memo[key] = plan if not plan.unfixable else _solve(Stack(ctx, require), explain)
    return memo[key]


def plan_fix(ctx: Context, *names: str, keep: dict[str, str] | None = None) -> tuple[str, Remedy | None]:
    """The resolver's one pip line and its remedy when it moves any of ``names`` (any package
    when none is named); ``keep`` (name -> version) asks for the plan that keeps those.
    ``("", None)`` when the plan changes none of them; the reason when nothing resolves."""
    plan = plan_packages(ctx, {n: f"=={v}" for n, v in (keep or {}).items()}, explain=not keep)
    if plan.unfixable:
        return f"no set of versions envdoctor knows fixes this: {plan.unfixable}", None
    if plan.changes and (not names or set(names) & set(plan.changes)):
        return plan.command, plan.remedy()
    return "", None
