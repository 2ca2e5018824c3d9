"""Rules on installed versions: vLLM presence and age, requirements, curated compatibility."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context, vllm_unused
from envdoctor.checks.matching import confirmed_break, when_holds
from envdoctor.checks.model_floors import model_names
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.facts.interface import Package, normalize_name
from envdoctor.facts.packages import extra_only, parse_requirement
from envdoctor.findings import Remedy, Severity
from envdoctor.knowledge import release_said
from envdoctor.knowledge.requirements import (
    SOURCES,
    VLLM_FLOOR,
    api_verdict,
    below_api_floor,
    harmless,
    imported_at_import,
    marker_env,
    requirement_lines,
    weight,
)

#: Distributions whose requirements are checked (the training stack): the resolver's list.
CHECKED = SOURCES


def plan_fix(ctx: Context, *names: str, keep: dict[str, str] | None = None) -> tuple[str, Remedy | None]:
    """``resolver.plan_fix``: the resolver loads only when a finding asks for its fix."""
    from envdoctor.checks.resolver import plan_fix as resolved

    return resolved(ctx, *names, keep=keep)


def _vllm_fix(ctx: Context, minimum: str) -> str:
    line = ctx.kb.trl_line(ctx.version("trl")) or {}
    rng = str(line.get("vllm") or "")
    if rng and versions.satisfies(minimum, rng) and "," in rng:
        return f"pip install 'vllm{rng}'"  # the range this TRL supports starts above minimum
    return f"pip install 'vllm>={minimum}'"


def unused_vllm(found: Hit, said: str, imported: str | None = None) -> Hit:
    """``found``, a finding on the installed vLLM's versions, as advice where the run does not
    generate with vLLM (``said``: ``context.vllm_unused``): the version checks of an engine that
    never starts cannot fail the run. Its fix stays for the day use_vllm is turned on.
    ``imported`` (trl_imports_vllm, for vLLM's torch pin): TRL imports vLLM all the same, an
    import seen to pass with that pin unmet on either side (TimeZero: vLLM 0.7.2, built for torch
    2.5.1, on torch 2.6.0; heyalexchoi/qwen3-1.7B-MATH-RLVR@8986c60: vLLM 0.19.0, built for
    2.10.0, on torch 2.6.0 with TRL 1.0.0, 7,496 steps)."""
    also = (
        f"; {imported}, but that import alone was seen to pass with vLLM's torch pin unmet, on an "
        "older and on a newer torch"
        if imported
        else ""
    )
    return replace(
        found,
        message=f"{found.message}; but {said}, so this does not stop the run{also} (it matters once "
        "the run generates with vLLM)",
        fix=f"nothing for this run; pip uninstall vllm to drop what it does not use, or before "
        f"turning use_vllm on: {found.fix}",
        severity=Severity.INFO,
        remedy=None,
        alternatives=(),
        evidence={**found.evidence, "vllm_unused": said},
    )


def _other_trainer_imports(ctx: Context) -> tuple[str, list[str]] | None:
    """(the TRL trainer the run builds instead of GRPOTrainer, the vLLM imports its path makes
    with the installed vLLM: rules/knowledge/trl_trainer_vllm.yaml), or None where the run builds
    GRPOTrainer, no TRL trainer, or the data does not cover the release."""
    from envdoctor.knowledge.requirements import trainer_vllm_imports

    script, trl, vllm = ctx.plan.script, ctx.version("trl"), ctx.version("vllm")
    trainer = script.trl_other_trainer if script is not None and not script.problem else None
    if not (trainer and trl and vllm) or script is None or script.builds_grpo:
        return None
    if any(getattr(c, "cls", "") == "GRPOTrainer" for c in script.trl_calls):
        return None
    found = trainer_vllm_imports(ctx.kb, trl, trainer, vllm)
    return None if found is None else (trainer, found)


def trainer_loads_no_vllm(ctx: Context) -> str | None:
    """Why the run's trainer never loads vLLM (a TRL trainer other than GRPOTrainer whose import
    path and own code, read at TRL's tags, make no vLLM import with the installed vLLM), or None."""
    found = _other_trainer_imports(ctx)
    if found is None or found[1]:
        return None
    return (
        f"TRL {ctx.version('trl')}'s {found[0]} imports no vLLM module with vLLM {ctx.version('vllm')} "
        "installed (its import path and its own code, read at TRL's tags), so vLLM's compiled ops "
        "never load"
    )


def trl_imports_vllm(ctx: Context) -> str | None:
    """How the installed TRL imports vLLM whenever it is installed, use_vllm on or off, or None:
    ``if is_vllm_available(): from vllm… import …`` at module level of a module ``from trl import
    GRPOTrainer`` loads (rules/knowledge/requirement_floors.yaml ``at_import``, derived from its
    wheels; every release 0.14-1.16 has one); for a run of another TRL trainer, the imports its
    own path makes (trl_trainer_vllm.yaml; none: None)."""
    trl = ctx.version("trl")
    other = _other_trainer_imports(ctx)
    if other is not None:
        if not other[1]:
            return None
        module, _, code = other[1][0].partition(": ")
        return f"TRL {trl}'s {other[0]} imports vLLM whenever it is installed (`{code}` in {module})"
    stmt = imported_at_import(ctx.kb, "trl", trl, "vllm") if trl else None
    if stmt is None:
        return None
    module, _, code = stmt.partition(": ")
    path = module.replace(".", "/") + ("/__init__.py" if "." not in module else ".py")
    guard = f"`if is_vllm_available(): {code}` at module level of {path}"
    return f"TRL {trl} imports vLLM whenever it is installed ({guard})"


@rule("PKG001")
def vllm_missing(ctx: Context) -> Iterator[Hit]:
    script = ctx.plan.script
    in_process = script.vllm_in_process if script is not None else None
    if not ctx.plan.use_vllm:
        if in_process and ctx.version("vllm") is None and not ctx.facts.unknown("vllm"):
            # Unsloth's loader: fast_inference=True needs vLLM (unsloth/models/loader.py raises
            # "Please install vLLM before enabling `fast_inference`!")
            fix, remedy = plan_fix(ctx, "vllm")
            yield hit(
                f"{in_process} starts vLLM in the training process, but vLLM is not installed: the "
                "loader raises ImportError ('Please install vLLM before enabling `fast_inference`') "
                "before training",
                fix=f"{fix}  # the vLLM release built for this torch; or fast_inference=False"
                if remedy
                else "pip install vllm  # the release your Unsloth supports; or fast_inference=False",
                remedy=remedy,
                in_process=in_process,
            )
        return
    if ctx.version("vllm") is None and not ctx.facts.unknown("vllm"):
        trl = ctx.version("trl")
        fix, remedy = plan_fix(ctx, "vllm")
        yield hit(
            "use_vllm is on but vLLM is not installed"
            + (f" ({release_said('trl', trl, ctx.kb)} imports it when the trainer starts)" if trl else ""),
            fix=(f"{fix}  # the vLLM release in TRL's range built for this torch" if remedy else fix)
            or "pip install 'trl[vllm]'  # installs the vLLM release this TRL supports",
            use_vllm=True,
            remedy=remedy,
        )


#: the TRL release from which the trainer no longer runs vLLM in its own process on a GPU of its
#: own (the server / colocate era)
_SERVER_ERA = "0.16.0"


def _before_device_fix(ctx: Context) -> str | None:
    """Why vLLM is too old for TRL's GRPO at all (None when it is not): below the device fix
    TRL's in-process generation needs, with a TRL of that era; with a later TRL, below that fix
    and outside the TRL line's own vLLM range too (inside it, TRL 0.16's >=0.7.0, the server era
    does not place vLLM on a trainer's device)."""
    vllm, trl = ctx.version("vllm"), ctx.version("trl")
    if not (vllm and trl and versions.below(vllm, VLLM_FLOOR)):
        return None
    if versions.below(trl, _SERVER_ERA):
        return (
            f"vLLM {vllm} is older than {VLLM_FLOOR}, the release with the device fix TRL's GRPO "
            'needs (TRL raised its floor to it): expect "Expected all tensors to be on the same '
            'device" where vLLM runs on another GPU than the trainer'
        )
    line = ctx.kb.trl_line(trl)
    rng = str((line or {}).get("vllm") or "")
    if rng and versions.satisfies(vllm, rng) is False:
        return (
            f"vLLM {vllm} is older than {VLLM_FLOOR} and outside TRL {trl}'s vLLM range ({rng}): "
            "TRL's server and weight sync call vLLM APIs that release does not have"
        )
    return None


@rule("PKG002", needs=("vllm", "trl-trainer"))
def vllm_too_old(ctx: Context) -> Iterator[Hit]:
    vllm = ctx.version("vllm")
    said = _before_device_fix(ctx)
    if said:
        fix, remedy = plan_fix(ctx, "vllm")
        yield hit(
            said,
            fix=fix or _vllm_fix(ctx, "0.7.2"),
            vllm=vllm,
            remedy=remedy,
        )


@rule("PKG003", needs=("vllm", "trl-trainer"))
def vllm_too_old_multi_gpu(ctx: Context) -> Iterator[Hit]:
    vllm = ctx.version("vllm")
    lay = ctx.layout
    if (
        vllm
        and lay.generation_mode == "legacy"
        and not versions.below(vllm, VLLM_FLOOR)
        and versions.below(vllm, "0.7.2")
    ):
        yield hit(
            f"vLLM {vllm} with TRL's in-process vLLM: a field report met device-mismatch and "
            "rotary-size errors that upgrading to vLLM 0.7.2 ended, but TRL 0.15.0 asks vLLM "
            f">= {VLLM_FLOOR} for the device fix and open-r1 ran its GRPO recipes on it: only if "
            "generation misbehaves",
            fix=f"{_vllm_fix(ctx, '0.7.2')}  # only if generation errors (TRL 0.15.2 pins 0.7.2)",
            vllm=vllm,
            world_size=lay.world_size,
        )
        return
    if (
        vllm
        and lay.generation_mode == "legacy"
        and not versions.below(vllm, "0.7.2")
        and versions.below(vllm, "0.7.3")
        and lay.world_size > 1
    ):
        yield hit(
            f"vLLM {vllm} with {lay.world_size} training processes and a dedicated vllm_device: "
            "a field report advises vLLM 0.7.3 or newer for such setups, but TRL 0.15 pins "
            "vllm==0.7.2 and published recipes ran them on it: only if generation misbehaves",
            fix=f"{_vllm_fix(ctx, '0.7.3')}  # only if generation hangs or errors (TRL 0.15 pins 0.7.2)",
            vllm=vllm,
            world_size=lay.world_size,
        )


def _extras(ctx: Context, dist: str) -> set[str]:
    """The extras of ``dist`` the plan relies on. Without vLLM installed, PKG001's
    `pip install 'trl[vllm]'` brings the whole extra: its parts are not listed one by one."""
    wanted = dist == "trl" and ctx.plan.use_vllm and ctx.version("vllm") is not None
    return {"vllm"} if wanted else set()


def _missing(
    ctx: Context,
    who: str,
    pkg: Package,
    target: str,
    spec: str,
    line: str,
    kind: str,
    entry: dict[str, Any] | None,
    curated: bool,
) -> Hit | None:
    if kind == "other" or entry is None:
        if not ctx.facts.live and target not in CHECKED:
            return None  # snapshots list only part of the environment
        return hit(
            f"{who} {pkg.version} requires {target}{spec}, which is not installed "
            "(a warning: envdoctor knows of no step of a GRPO run that imports it)",
            fix=f"pip install '{target}{spec}'",
            severity="warning",
            requirement=line,
            weight="other",
        )
    if not ctx.facts.live and (curated or target not in CHECKED and not pkg.requires):
        return None
    unless = entry.get("unless_env") or {}
    env = {**ctx.facts.env, **(ctx.plan.server.env if ctx.plan.server else {})}
    if unless and all(env.get(k) == str(v) for k, v in unless.items()):
        return None  # the user switched off the code path that imports it
    fix = f"pip install '{target}{spec}'"
    if entry.get("workaround"):
        fix += f"  # {entry['workaround']}"
    why = f"{who} cannot load without it" if kind == "binds" else entry.get("why", "")
    return hit(
        f"{who} {pkg.version} requires {target}{spec}, which is not installed → {why}",
        fix=fix,
        remedy=_pins(target, spec),
        requirement=line,
        weight=kind,
    )


def _pins(target: str, spec: str) -> list[Remedy]:
    """The remedy where the version is exact (``target==X``): a pin; none for a range."""
    if spec.startswith("==") and "," not in spec and "*" not in spec:
        return [Remedy(packages={target: spec[2:].strip()}, fix=f"pip install '{target}{spec}'")]
    return []


def _mismatch(
    ctx: Context,
    who: str,
    src: str,
    pkg: Package,
    target: str,
    spec: str,
    line: str,
    installed: str,
    kind: str,
    entry: dict[str, Any] | None,
    curated: bool,
) -> Hit | None:
    fix, remedy = plan_fix(ctx)
    if remedy is None:
        fix = fix or f"pip install '{target}{spec}'"
    elif target not in remedy.packages or remedy.packages[target] == installed:
        pass  # the plan keeps the target already
    else:
        alt, alt_remedy = plan_fix(ctx, keep={target: installed})
        if alt_remedy is not None and alt_remedy.packages != remedy.packages:
            fix += f"  # or keep {target} {installed}: {alt}"
    origin = " (its curated pin: this snapshot has no Requires-Dist)" if curated else ""
    head = f"{who} {pkg.version} requires {target}{spec}{origin}, installed {target} {installed}"
    api = _api_judges(ctx, src, pkg.version, target, installed, spec, kind, entry)
    if api is not None:
        read = api["judged"][0] if len(api["judged"]) == 1 else " and ".join(api["judged"])
        read = f"{src} {read}" + (
            "" if len(api["judged"]) == 1 else f", the scanned releases around {pkg.version}"
        )
    path = _API_PATH.get(src, _API_PATH["trl"])
    if api is not None and api["lacks"]:
        names = ", ".join(_import_line(n) for n in api["lacks"][:3])
        more = f" (and {len(api['lacks']) - 3} more)" if len(api["lacks"]) > 3 else ""
        return hit(
            f"{head} → {src} {pkg.version} uses what {target} {installed} lacks, {path[0]}: "
            f"{names}{more} ({path[1]}, read in the wheel of {read} and checked against "
            f"{target}'s releases: rules/knowledge/requirement_api.yaml) → {path[2]}",
            fix=fix,
            requirement=line,
            installed=installed,
            weight=kind,
            lacks=api["lacks"],
            remedy=remedy,
        )
    if api is not None:
        return hit(
            f"{head} (a warning: pip check reports it, but every name ({api['names']}) that "
            f"{path[3]} import or read from {target} (read in the wheel of {read}) is "
            f"in {target} {installed} (rules/knowledge/requirement_api.yaml); a floor is often "
            "raised for a newer feature, not a break)",
            fix=fix,
            severity="warning",
            requirement=line,
            installed=installed,
            weight=kind,
            remedy=remedy,
        )
    if entry is not None and (kind == "binds" or kind == "imports" and entry.get("version_checked")):
        return hit(
            f"{head} → {src}: {entry['why']}" if kind == "binds" else f"{head} → {entry['why']}",
            fix=fix,
            requirement=line,
            installed=installed,
            weight=kind,
            remedy=remedy,
        )
    confirmed = confirmed_break(ctx, src, target)
    if confirmed is not None:  # KNF001 reports the confirmed break, with its fix
        return None
    seen = harmless(ctx.kb, src, pkg.version, target, installed)
    why = (
        f"harmless where measured: {seen['note']}"
        if seen
        else f"a warning: no compiled code of {src} binds {target} and envdoctor knows of no step "
        "of a GRPO run that needs this pin; pip check still reports it"
    )
    return hit(
        f"{head} ({why})",
        fix=fix,
        severity="warning",
        requirement=line,
        installed=installed,
        weight="other",
        remedy=remedy,
    )


#: per importer judged at the API (rules/knowledge/requirement_api.yaml): where its names are
#: read, what reads them, what a missing one does, and which modules (the warning's wording)
_API_PATH = {
    "trl": (
        "on the way to GRPOTrainer",
        "what the modules `from trl import GRPOTrainer` loads import at module level, read at "
        "import or in GRPOConfig's / GRPOTrainer's constructors",
        "the run fails at start (ImportError / AttributeError)",
        "the modules `from trl import GRPOTrainer` loads",
    ),
    "vllm": (
        "on its import and engine start",
        "what the modules `import vllm`, `vllm.LLM` and the engine's start (its config, tokenizer "
        "and processor loading, not a model's own module) load import at module level",
        "vLLM fails when it is imported or its engine starts (ImportError)",
        "the modules `import vllm`, `vllm.LLM` and the engine's start load",
    ),
}


def _api_judges(
    ctx: Context,
    src: str,
    version: str,
    target: str,
    installed: str,
    spec: str,
    kind: str,
    entry: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """The API verdict on an unmet floor of a requirement the run imports (api_verdict), read
    only here: a floor (``>=``) the installed release is below, and nothing else of the range unmet.
    None for another kind of mismatch, or where the data does not cover the pair."""
    if kind != "imports" or entry is None or not entry.get("version_checked"):
        return None
    unmet = [c for c in spec.split(",") if c.strip() and versions.satisfies(installed, c.strip()) is False]
    if not unmet or any(not c.strip().startswith((">=", ">")) for c in unmet):
        return None
    return api_verdict(ctx.kb, src, version, target, installed)


def _import_line(name: str) -> str:
    """``transformers.utils:is_rich_available`` -> ``from transformers.utils import is_rich_available``;
    ``transformers:TrainingArguments._VALID_DICT_FIELDS`` -> that attribute, read at import;
    ``vllm.transformers_utils.config:raise if transformers<5.0.0`` -> the module's own check."""
    module, _, attr = name.partition(":")
    if attr.startswith("raise if "):  # a version check the module makes at import (version_gates)
        return f"`import {module}` raises ImportError where {attr[len('raise if ') :]}"
    if "." in attr:
        return f"`{attr}` (`from {module} import {attr.split('.')[0]}`)"
    return f"`from {module} import {attr}`" if attr else f"`import {module}`"


@rule("PKG004")
def requirement_unsatisfied(ctx: Context) -> Iterator[Hit]:
    env = marker_env(ctx.facts.python)
    unused = vllm_unused(ctx)
    for src in CHECKED:
        pkg = ctx.facts.packages.get(src)
        if pkg is None:
            continue
        lines, curated = requirement_lines(ctx.kb, src, pkg)
        extras = {""} | _extras(ctx, src)
        wanted = {normalize_name(e) for e in extras}
        for line in lines:
            only = extra_only(line)
            if only is not None and only not in wanted:
                continue  # for an extra this run does not install (no parse needed to know)
            req = parse_requirement(line)
            if req is None:
                continue
            if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e}) for e in extras):
                continue
            target = normalize_name(req.name)
            via = next(
                (
                    e
                    for e in sorted(extras - {""})
                    if req.marker is not None
                    and "extra" in str(req.marker)
                    and req.marker.evaluate({**env, "extra": e})
                ),
                None,
            )
            who = f"{src}[{via}]" if via else src
            installed = ctx.version(target)
            spec = str(req.specifier)
            kind, entry = weight(ctx.kb, src, pkg.version, target)
            if installed is None:
                if target in ctx.facts.packages or ctx.facts.unknown(target):
                    continue  # unparseable (PKG005), or not named with --assume: unknown
                found = _missing(ctx, who, pkg, target, spec, line, kind, entry, curated)
                if found is not None:
                    yield unused_vllm(found, unused) if unused and "vllm" in (src, target) else found
                continue
            if versions.placeholder(installed):
                continue  # 0+unknown: installed, but which release is not recorded: no range judges it
            if spec and versions.satisfies(installed, spec) is False:
                found = _mismatch(ctx, who, src, pkg, target, spec, line, installed, kind, entry, curated)
                found = _overridden(ctx, target, found)
                if found is not None and unused and "vllm" in (src, target):
                    none = trainer_loads_no_vllm(ctx) if target == "torch" else None
                    said = f"{unused}; {none}" if none else unused
                    found = unused_vllm(found, said, trl_imports_vllm(ctx) if target == "torch" else None)
                if found is not None:
                    yield found
        yield from _undeclared_floors(ctx, src, pkg, lines)


def _stubbed(ctx: Context, lacks: list[str]) -> list[str]:
    """Where the run's script assigns every name of ``lacks`` (``module:name``) onto its module
    (``_fsdp.FSDPModule = Stub`` before ``import trl``); [] where one is not."""
    script = ctx.plan.script
    stubs = script.stubs if script is not None and not script.problem else {}
    if not lacks or not stubs or any(n not in stubs for n in lacks):
        return []
    return [f"{n.replace(':', '.')} at {stubs[n]}" for n in lacks]


def _overridden(ctx: Context, target: str, found: Hit | None) -> Hit | None:
    """An unmet requirement on a package the repository declares as an override (uv's
    ``override-dependencies``): the repository chose that release over the requirement on
    purpose, so the installer puts it in place; whether the requiring package runs with it is
    not known (a pin is often conservative), so an error is a warning and says so."""
    if found is None or found.severity not in (None, Severity.ERROR):
        return found  # None: PKG004's own severity, an error
    declared = ctx.facts.extra.get("declared")
    if declared is not None:  # the hook: the declared stack it judges
        entry = (declared.get("stack") or {}).get(target)
        decl = next((d for d in getattr(entry, "decls", ()) if d.override), None)
    else:  # check: the installed stack, and the override the repository run from declares
        decl = _repository_override(ctx, target)
    if decl is None:
        return found
    return replace(
        found,
        message=f"{found.message} (a warning: {decl.where} declares {target} as an override of "
        "every requirement on it ([tool.uv] override-dependencies), so uv installs it over this "
        "one on purpose; whether the requiring package runs with it is not proved either way)",
        # no remedy: a fix that undoes the repository's own choice is not one to follow blindly
        fix=f"keep the override where your runs pass with it; else drop {target} from "
        f"override-dependencies ({decl.where}) and {found.fix[:1].lower()}{found.fix[1:]}",
        severity=Severity.WARNING,
        remedy=None,
        alternatives=(),
    )


def _repository_override(ctx: Context, target: str) -> Any:
    """The repository's uv override of ``target`` (``[tool.uv] override-dependencies``) in the
    ``pyproject.toml`` of the folder check runs in or of the training script's folder and those
    above it up to there: the same declaration the hook judges, so both say the same of one
    stack. Read once per check, and only for an unmet requirement (the static check reads no
    pyproject otherwise)."""
    overrides = ctx.__dict__.get("_uv_overrides")
    if overrides is None:
        overrides = ctx.__dict__["_uv_overrides"] = _read_overrides(ctx)
    return overrides.get(target)


def _read_overrides(ctx: Context) -> dict[str, Any]:
    """Package name -> its override declaration, from the nearest pyproject.toml that has one."""
    from envdoctor.errors import InputError
    from envdoctor.facts.declared import pyproject

    here = Path.cwd()
    places = [here]
    script = ctx.plan.script
    if script is not None and script.path:
        folder = (here / script.path).resolve().parent
        while folder != here and here in folder.parents and len(places) < MAX_UP:
            places.append(folder)
            folder = folder.parent
    out: dict[str, Any] = {}
    for place in places:
        path = place / "pyproject.toml"
        if not path.is_file():
            continue
        try:
            found = pyproject.read(path, str(path.relative_to(here)) if place != here else path.name)
        except (InputError, OSError):
            continue  # an unreadable file: no override is known (the hook says what is wrong)
        for d in found.declarations:
            if d.override:
                out.setdefault(normalize_name(d.name), d)
    return out


MAX_UP = 8  # folders from the script's up to the one check runs in


def _undeclared_floors(ctx: Context, src: str, pkg: Package, lines: list[str]) -> Iterator[Hit]:
    """The API floor of a requirement ``src`` imports on its run's path but does not declare
    (rules/knowledge/requirement_floors.yaml, scripts/derive_requirement_api.py): TRL 0.29-1.13
    import ``FSDPModule`` from torch 2.6 at module level, so ``from trl import GRPOTrainer`` fails
    on torch 2.4 though pip sees no conflict. Left out where another framework trains (TRL's
    GRPOTrainer may never be imported)."""
    floors = (ctx.kb.requirement_floors.get("floors") or {}).get(src) or {}
    if not floors:
        return
    if ctx.plan.framework is not None:
        from envdoctor.plan.framework import leaves_out

        if leaves_out(ctx.plan.framework, "trl-trainer"):
            return
    declared = {normalize_name(r.name) for ln in lines if (r := parse_requirement(ln)) is not None}
    for target in (t for t in floors if t != "releases" and t not in declared):
        installed = ctx.version(target)
        if installed is None or versions.placeholder(installed):
            continue
        floor = below_api_floor(ctx.kb, src, pkg.version, target, installed)
        if floor is None:
            continue
        public = versions.parse(installed)
        api = api_verdict(ctx.kb, src, pkg.version, target, public.public if public else installed)
        lacks = list(api["lacks"]) if api else []
        stubbed = _stubbed(ctx, lacks)
        names = ", ".join(_import_line(n) for n in lacks[:3]) or f"names of {target} {floor}"
        if stubbed:
            yield hit(
                f"{src} {pkg.version} imports {names} from {target}, which {target} {installed} lacks "
                f"(its API floor is {floor}), but the run's script assigns each onto {target} "
                f"before ({', '.join(stubbed)}): a stand-in the import passes with; what {src} "
                "does with it at run time is not checked",
                fix=f"nothing to do while the stand-in serves; pip install '{target}>={floor}' "
                "makes it unneeded",
                severity="info",
                requirement=f"{target}>={floor} (the API floor; undeclared)",
                installed=installed,
                weight="imports",
                lacks=lacks,
                stubbed=stubbed,
            )
            continue
        read = " and ".join(api["judged"]) if api else pkg.version
        path = _API_PATH.get(src, _API_PATH["trl"])
        fix, remedy = plan_fix(ctx, target, src)
        if remedy is not None and target in remedy.packages:
            alt, alt_remedy = plan_fix(ctx, keep={target: installed})
            if alt_remedy is not None and alt_remedy.packages != remedy.packages:
                fix += f"  # or keep {target} {installed}: {alt}"
        yield hit(
            f"{src} {pkg.version} declares no {target} requirement, but {path[3]} import what "
            f"{target} {installed} lacks: {names} (read in the wheel of {src} {read} and checked against "
            f"{target}'s releases: rules/knowledge/requirement_api.yaml; {target} {floor} is the "
            f"first release with them) → {path[2]}; pip check does not see it",
            fix=fix or f"pip install '{target}>={floor}'",
            requirement=f"{target}>={floor} (the API floor; undeclared)",
            installed=installed,
            weight="imports",
            lacks=lacks,
            remedy=remedy,
        )


@rule("PKG005")
def version_unparseable(ctx: Context) -> Iterator[Hit]:
    for name in CHECKED:
        pkg = ctx.facts.packages.get(name)
        if pkg is not None and versions.parse(pkg.version) is None:
            yield hit(
                f"{name} reports version {pkg.version!r}, which is not a PEP 440 version: "
                "version rules cannot judge it",
                fix=f"pip install --force-reinstall {name}  # reinstall from a release",
                package=name,
                version=pkg.version,
            )


@rule("PKG006", needs=("vllm", "trl-trainer"))
def vllm_outside_trl_range(ctx: Context) -> Iterator[Hit]:
    trl, vllm = ctx.version("trl"), ctx.version("vllm")
    line = ctx.kb.trl_line(trl)
    if not (trl and vllm and line and line.get("vllm")):
        return
    rng = str(line["vllm"])
    if _before_device_fix(ctx):
        return  # PKG002 says it, with the GRPO errors to expect
    if versions.satisfies(vllm, rng) is False and confirmed_break(ctx, "trl", "vllm") is None:
        fix, remedy = plan_fix(ctx, "vllm", "trl")
        before = _line_before_dev(ctx, trl)
        dev = before is not None and versions.satisfies(vllm, str(before.get("vllm") or "")) is True
        driven = _vllm_driven_elsewhere(ctx)
        fits = None if dev or driven else _api_fits(ctx, trl, vllm, rng)
        yield hit(
            f"TRL {trl} supports vLLM {rng} for GRPO; installed vLLM {vllm}"
            + (
                f"; but TRL {trl} is a development build on its way to that release, and vLLM {vllm} "
                f"is inside the range of the release before it ({before['vllm']}): which range the "
                "build's own [vllm] extra asks is not known"
                if dev and before is not None
                else ""
            )
            + (f"; but {driven}" if driven else "")
            + (f"; but {fits}" if fits else ""),
            fix=fix or f"pip install 'vllm{rng}'",
            severity="info" if dev or driven or fits else None,
            remedy=remedy,
            trl=trl,
            vllm=vllm,
            references=line.get("references", []),
        )


def _api_fits(ctx: Context, trl: str, vllm: str, rng: str) -> str | None:
    """Why a vLLM of the line after the TRL line's range is no likely break: TRL's range ends at
    the newest vLLM its release was tested with, and scripts/refresh_knowledge.py checked every vLLM
    API the TRL release calls on GRPO's path (imports, names, ``LLM(...)`` / ``SamplingParams``
    keywords, ``vllm serve`` flags, routes) against each vLLM wheel (vllm_api.yaml). Both
    releases scanned and no break on GRPO's path between them: the API is there (behaviour
    stays untested by TRL). A build between two scanned releases (``0.18.2rc1.dev73``) is judged
    by both neighbours. None where the vLLM is below the range, unscanned, or a break applies."""
    if not _next_line(vllm, versions.spec(rng)):
        return None  # below the range, or past the line after its ceiling (untested behaviour)
    api = ctx.kb.vllm_api
    scanned_trl = set(api.get("trl_scanned") or ())
    scanned = sorted(
        (p, str(s)) for s in api.get("vllm_scanned") or () if (p := versions.parse(str(s))) is not None
    )
    v = versions.parse(vllm)
    if v is None or trl not in scanned_trl or not scanned or v > scanned[-1][0]:
        return None
    base = versions.parse(".".join(map(str, v.release)))
    exact = [s for p, s in scanned if p == v or (p == base and not v.is_prerelease)]
    around = exact or [s for p, s in scanned if p < v][-1:] + [s for p, s in scanned if p > v][:1]
    if not around:
        return None
    for row in api.get("breaks") or ():
        if not row.get("on_grpo_path") or versions.satisfies(trl, str(row.get("trl", ""))) is not True:
            continue
        if any(versions.satisfies(s, str(r)) is True for s in around for r in row.get("vllm") or ()):
            return None  # PKG006's warning stands: the API scan found a call this vLLM lacks
    judged = " and ".join(around)
    return (
        f"every vLLM API that TRL {trl} calls on GRPO's path (imports, LLM() and SamplingParams "
        f"keywords, `vllm serve` flags, server routes) is present in vLLM {judged} (both wheels "
        "read, rules/knowledge/vllm_api.yaml): newer than TRL tested, not a known break"
    )


def _next_line(vllm: str, spec: Any) -> bool:
    """``vllm`` is above the range's ceiling and in the minor line right after it (TRL tests the
    vLLM of its release month; the next vLLM line usually lands before TRL's next release). A
    range with no ceiling, or a vLLM below the range: False."""
    v = versions.parse(vllm)
    ceilings = [
        (s.operator, top)
        for s in spec or ()
        if s.operator in ("<", "<=", "==") and (top := versions.parse(str(s.version).removesuffix(".*")))
    ]
    if v is None or not ceilings:
        return False
    op, top = min(ceilings, key=lambda c: c[1])
    above = v >= top if op == "<" else v > top
    major, minor = (top.release + (0, 0))[:2]
    last = (major, minor) if op == "<" else (major, minor + 1)
    return above and (v.release + (0, 0))[:2] <= last


def _vllm_driven_elsewhere(ctx: Context) -> str | None:
    """Why TRL's vLLM range does not judge the run's vLLM: the training script starts vLLM
    in-process through a library that drives it and patches TRL's trainer on import (Unsloth's
    ``fast_inference=True``: its GRPOTrainer generates with ``model.vllm_engine``, never TRL's
    vLLM client or colocated engine, unsloth/models/rl.py); None otherwise."""
    script = ctx.plan.script
    if script is None or script.problem or not (script.vllm_in_process and script.patched_by):
        return None
    return (
        f"{script.vllm_in_process} starts vLLM through {script.patched_by}, whose patched trainer "
        "generates with its own engine: TRL's range is that of TRL's vLLM client and colocated "
        f"engine, which this run does not use (the vLLM {script.patched_by} supports decides)"
    )


def _line_before_dev(ctx: Context, trl: str) -> dict[str, Any] | None:
    """For a development build of TRL (``0.17.0.dev0``: a commit of main between 0.16 and
    0.17), the line of the release before the one it leads to (0.16's): main changes its pins at
    some commit between the two, so a build may still carry the older range (TRL main at
    e751a16, 2025-03-31, a 0.17.0.dev0, asked vllm>=0.7.0, where 0.17.0 asks >=0.8.3). None for
    a release, or where there is no earlier minor line."""
    v = versions.parse(trl)
    if v is None or not v.is_prerelease or len(v.release) < 2 or v.release[1] == 0:
        return None
    major, minor = v.release[0], v.release[1]
    return ctx.kb.trl_line(f"{major}.{minor - 1}.999")


@rule("PKG007")
def known_bad_combination(ctx: Context) -> Iterator[Hit]:
    for entry in ctx.kb.vllm.get("known_bad", []):
        if entry.get("rule"):
            continue  # a dedicated rule reports this one
        when = entry.get("when") or {}
        if when and when_holds(ctx, when):
            installed = ", ".join(f"{k} {ctx.version(k)}" for k in when if ctx.version(k) is not None)
            found = hit(
                f"known-bad combination ({installed}): {entry.get('symptom', '').strip()}",
                fix=str(entry.get("fix", "")).strip(),
                id=entry.get("id"),
                severity=entry.get("severity", "error"),
                references=entry.get("references", []),
            )
            unused = vllm_unused(ctx) if "vllm" in when else None
            yield unused_vllm(found, unused) if unused else found


@rule("PKG008", needs=("plan", "trl-trainer"))
def trl_missing(ctx: Context) -> Iterator[Hit]:
    if ctx.version("trl") is None and not ctx.facts.unknown("trl") and (ctx.config or ctx.plan.trainer):
        assumed = (
            f" (the TRL-dependent rules and TRL's defaults in the memory plan assume "
            f"TRL {ctx.trl.version}: {ctx.trl.why})"
            if ctx.trl.assumed
            else ""
        )
        fix, remedy = plan_fix(ctx, "trl")
        unused = _script_without_trl(ctx)
        if unused is not None:
            yield hit(
                f"TRL is not installed here, and the training script {unused} imports neither TRL nor "
                "Unsloth (nor do the repository modules it imports that envdoctor read) and builds no "
                "GRPOTrainer or GRPOConfig: if this run trains with TRL after all "
                f"(through a module envdoctor did not read), GRPOTrainer cannot start{assumed}",
                fix=fix or "pip install trl",
                remedy=remedy,
                severity="info",
                assumed_trl=ctx.trl.version,
            )
            return
        yield hit(
            f"TRL is not installed here, so GRPOTrainer cannot start{assumed}",
            fix=fix or "pip install trl",
            remedy=remedy,
            assumed_trl=ctx.trl.version,
        )


def _script_without_trl(ctx: Context) -> str | None:
    """The training script read where nothing in it uses TRL: neither it nor a repository module it
    imports (read) imports trl or unsloth (which imports trl), it builds no GRPOTrainer (its own
    subclasses included) and no GRPOConfig, and builds no trainer class envdoctor could not read;
    None otherwise (or no script read)."""
    script = ctx.plan.script
    if script is None or script.problem:
        return None
    if script.builds_grpo or script.unread_trainer or script.config_class is not None or script.trl_import:
        return None
    return script.path


#: What the rules extrapolate for a release of each package newer than the knowledge (PKG009).
EXTRAPOLATED = {
    "trl": "its GRPOConfig keys and defaults, vLLM range and requirements are taken from the newest "
    "known release",
    "vllm": "no torch pin, transformers bounds or TRL range is known for it; its defaults are taken from "
    "the newest known release",
    "torch": "which vLLM release is built for it is not known",
}


@rule("PKG009")
def newer_than_knowledge(ctx: Context) -> Iterator[Hit]:
    if "declared" in ctx.facts.extra:
        return  # a declared stack: DCL005 says it, with the file and line
    from envdoctor.knowledge import beyond_horizon, horizon

    for name in horizon(ctx.kb):
        past = beyond_horizon(name, ctx.version(name), ctx.kb)
        if past is None:
            continue
        what = EXTRAPOLATED.get(name, "the known failures and requirements stop at the newest known release")
        yield hit(
            f"{past.display} {past.version} is newer than the newest release envdoctor knows "
            f"({past.display} {past.newest}, released {past.released}): {what}, so a break in "
            f"{past.version} goes unseen",
            fix=f"upgrade envdoctor (pip install -U grpo-envdoctor), or pin '{name}=={past.newest}', "
            "the newest release it has checked",
            package=name,
            version=past.version,
            newest=past.newest,
            released=past.released,
        )


@rule("PKG010", needs=("model",))
def model_newer_than_package(ctx: Context) -> Iterator[Hit]:
    """The model's config.json names a model type (transformers) or architecture (vLLM, when the
    run uses it) that the installed release does not have and a later one does
    (rules/knowledge/models.json.gz): the load refuses it. Quiet for a model with code of its own
    (auto_map) and a name no release read has. The package resolver keeps the same floors
    (``model_names``), so every plan it makes, this rule's fix among them, keeps the model."""
    from envdoctor.checks.resolver import plan_packages
    from envdoctor.knowledge.models import DISPLAY, has
    from envdoctor.plan.memory.planner import _resolved

    short: list[tuple[str, str, str, str, Any]] = []  # dist, name, kind, installed, Support
    for dist, name, kind, found in model_names(ctx):
        installed = ctx.version(dist)
        if installed is None or has(dist, name, installed) is not False:
            continue  # not installed, has it, or a release outside those read
        if not versions.below(installed, found.first):
            continue  # removed since (another story: the load says which release had it)
        short.append((dist, name, kind, installed, found))
    if not short:
        return
    shape, _ = _resolved(ctx)
    assert shape is not None  # model_names found names in its config.json
    plan = plan_packages(ctx)  # the resolver's floors include the model's (Stack)
    moved = bool(plan.changes) and not plan.unfixable
    for dist, name, kind, installed, found in short:
        yield hit(
            f"{shape.name or 'The model'}'s config.json names {kind} {name}, which {DISPLAY[dist]} has "
            f"from {found.first} (envdoctor read {found.read()}); the installed {DISPLAY[dist]} "
            f"{installed} does not have it and refuses the model when it loads.",
            fix=plan.command if moved else f"pip install '{dist}>={found.first}'",
            remedy=plan.remedy() if moved else None,
            package=dist,
            installed=installed,
            name=name,
            first=found.first,
            config=shape.source,
        )
