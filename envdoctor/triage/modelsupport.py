"""A model newer (or older) than the installed transformers or vLLM: the refusal, named by release.

transformers refuses a checkpoint whose ``model_type`` its ``CONFIG_MAPPING`` lacks ("has model
type `qwen3` but Transformers does not recognize this architecture", a ``KeyError`` from
``models/auto/configuration_auto.py`` underneath); vLLM refuses ``config.json``'s architectures its
registry lacks ("Model architectures ['Qwen3ForCausalLM'] are not supported for now", "was
supported in vLLM until v0.23.0", "is not supported in-tree anymore"). Every new model family
meets it. The catalogue entries whose symptoms are these refusals (``ENTRIES``) are refined here
with the releases envdoctor read (rules/knowledge/models.json.gz): the name, the first release
that has it, and the fix within the pins the log shows (TRL's vLLM range per release, vLLM's
transformers range per release). A name no release read has is a custom model (its own code:
trust_remote_code) or a release newer than envdoctor knows (the knowledge horizon).
"""

from __future__ import annotations

import re
from typing import Any

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import Draft, Log
from envdoctor.triage.interface import Match

#: catalogue entry -> package whose refusal it is
ENTRIES = {
    "vllm-model-architecture-not-supported": "vllm",
    "vllm-architecture-removed": "vllm",
    "transformers-model-type-not-recognized": "transformers",
    "transformers-model-type-keyerror": "transformers",
}
_ARCHS = re.compile(
    r"Model architectures? \[?(?P<names>[^\]]{1,400}?)\]? "
    r"(?:are not supported|failed to be|was supp|is not supp)"
)
_TYPE = re.compile(r"has model type `(?P<name>[^`]{1,80})`|has model type (?P<bare>[\w.-]{1,80}) but")
_KEY = re.compile(r"KeyError: '(?P<name>[\w.-]{1,80})'")
_UNTIL = re.compile(r"was supported in vLLM until v([\w.]{1,20}?)\.?,")
_QUOTED = re.compile(r"'([\w.-]{1,120})'")


def _names(package: str, text: str) -> list[str]:
    if package == "vllm":
        m = _ARCHS.search(text)
        if m is None:
            return []
        inner = m["names"]
        return _QUOTED.findall(inner) or [inner.strip()]
    m = _TYPE.search(text)
    if m:  # the name in backticks, or bare where a page's markup ate them
        return [m["name"] or m["bare"]]
    m = _KEY.search(text)
    return [m["name"]] if m else []


def _shown(log: Log, dist: str) -> str | None:
    found = log.versions.get(dist)
    return found.version if found is not None and found.exact else None


def _trl_for_vllm(kb: Any, vllm: str, above: str | None) -> str | None:
    """The oldest TRL line (from ``above``'s on) whose stated vLLM range admits ``vllm`` (a line
    that states only a lower bound says nothing of a newer vLLM: not counted)."""
    for stated in (True, False):  # a line with a stated range first, else one with a floor only
        best = _trl_line_for(kb, vllm, above, stated)
        if best:
            return best
    return None


def _trl_line_for(kb: Any, vllm: str, above: str | None, stated: bool) -> str | None:
    """Among floor-only lines (``stated`` False) those whose floor is nearest below ``vllm``."""
    found: list[tuple[str, str]] = []  # (vLLM floor, the line's first TRL release)
    for line in kb.trl.get("trl_lines", []):
        spec, first = str(line.get("vllm") or ""), re.search(r">=\s*([\w.]+)", str(line.get("trl", "")))
        if not spec or not first or (stated and line.get("vllm_lower_bound_only")):
            continue
        if (
            above
            and versions.below(first.group(1), above)
            and not versions.satisfies(above, str(line["trl"]))
        ):
            continue
        if versions.satisfies(vllm, spec):
            floor = re.search(r">=\s*([\w.]+)", spec)
            found.append((floor.group(1) if floor else "0", first.group(1)))
    if not found:
        return None
    if not stated:
        top = max(found, key=lambda f: versions.sort_key(f[0]))[0]
        found = [f for f in found if f[0] == top]
    return min(found, key=lambda f: versions.sort_key(f[1]))[1]


def _vllm_pin(kb: Any, vllm: str) -> dict[str, Any]:
    return next((p for p in kb.vllm.get("torch_pins", []) if str(p.get("vllm")) == vllm), {})


def _vllm_for_transformers(kb: Any, candidates: list[str], above: str | None) -> str | None:
    """The oldest vLLM release (at or above ``above``) whose transformers range admits one of
    ``candidates`` (the transformers releases that have the model type)."""
    for pin in kb.vllm.get("torch_pins", []):
        v, spec = str(pin.get("vllm")), str(pin.get("transformers") or "")
        if above and versions.below(v, above):
            continue
        if spec and any(versions.satisfies(c, spec) for c in candidates):
            return v
    return None


def _vllm_fix(first: str, log: Log, kb: Any) -> tuple[str, str]:
    """The pip line that installs vLLM ``first`` or newer, and what the pins say of it."""
    want = [f"vllm>={first}"]
    said = []
    trl = _shown(log, "trl")
    line = kb.trl_line(trl) if trl else None
    spec = str((line or {}).get("vllm") or "")
    newer = _trl_for_vllm(kb, first, trl)
    if trl and spec and not versions.satisfies(first, spec):
        if newer:
            want.append(f"trl>={newer}")
            said.append(
                f"TRL {trl} supports vLLM {spec}; TRL {newer} is the first line whose range admits {first}"
            )
        else:
            said.append(
                f"TRL {trl} supports vLLM {spec}, and no TRL line envdoctor knows admits vLLM {first}"
            )
    elif not trl and newer:  # the log shows no TRL: which TRL goes with it, if any
        said.append(f"TRL {newer} is the first TRL line whose vLLM range admits {first}")
    pin = _vllm_pin(kb, first)
    if pin:
        said.append(
            f"vLLM {first} pins torch {pin.get('torch')} and requires transformers {pin.get('transformers')}"
        )
    return "pip install " + " ".join(f"'{w}'" for w in want), "; ".join(said)


def _transformers_fix(first: str, log: Log, kb: Any, having: list[str]) -> tuple[str, str]:
    """``having``: the transformers releases read that have the model type."""
    want = [f"transformers>={first}"]
    said = []
    vllm = _shown(log, "vllm")
    pin = _vllm_pin(kb, vllm) if vllm else {}
    spec = str(pin.get("transformers") or "")
    if vllm and spec and not any(versions.satisfies(c, spec) for c in having):
        newer = _vllm_for_transformers(kb, having, vllm)
        if newer:
            want.append(f"vllm>={newer}")
            said.append(
                f"vLLM {vllm} requires transformers {spec}, which no release with the model type meets; "
                f"vLLM {newer} is the first release whose range admits one"
            )
        else:
            said.append(
                f"vLLM {vllm} requires transformers {spec}, and no vLLM release envdoctor knows "
                f"admits {first} or newer"
            )
    return "pip install " + " ".join(f"'{w}'" for w in want), "; ".join(said)


def _horizon(package: str, newest: str) -> str:
    from envdoctor.knowledge.models import DISPLAY

    return (
        f"no {DISPLAY[package]} release envdoctor read has it: the model's own code (a custom model: "
        f"trust_remote_code), or a release newer than {DISPLAY[package]} {newest}, the newest envdoctor "
        "knows (its knowledge horizon)"
    )


def _inspected(d: Draft, known: Any, entry: Any, log: Log) -> Draft:
    """ "failed to be inspected": the registry has the architecture; importing or inspecting its
    class failed in vLLM's subprocess: a transformers that does not fit the model class's imports,
    the first release's early support of the model, an outdated checkpoint."""
    from envdoctor.knowledge.models import releases_with

    f = d.finding
    shown = _shown(log, "vllm")
    later = [r for r in releases_with("vllm", known.name) if shown and versions.below(shown, r)]
    early = bool(shown and shown == known.first and later)
    evidence = dict(
        f.evidence, model={"package": "vllm", "name": known.name, "first": known.first, "read": known.read()}
    )
    d.finding = Finding(
        f.rule,
        Severity.WARNING,
        f"vLLM could not inspect architecture {known.name}: the installed vLLM has it in its registry (vLLM "
        f"says so only then; it is in vLLM from {known.first}, envdoctor read {known.read()}), so the model "
        "is not too new for it: importing or inspecting the model class failed in a subprocess"
        + (
            f"; the log's vLLM {shown} is the first release with it (a model's first support is where "
            "such failures gather: a later release is the first thing to try)"
            if early
            else ""
        )
        + f" ({entry.id})",
        (
            f"pip install 'vllm>={later[0]}' (a release after the first with {known.name}); else "
            if early
            else ""
        )
        + "read the error the log shows before this line (vLLM inspects the model class in a subprocess): "
        "a transformers this vLLM does not fit (install the one it pins, or a later vLLM), a missing "
        "dependency of the model's module, or a checkpoint older than the model's current config "
        "(download it again)",
        evidence,
    )
    return d


def refine(entry: Any, m: Match, log: Log, drafts: list[Draft]) -> list[Draft]:
    """The drafts of a model refusal with its name, releases and fix; none where the symptom is
    not the refusal (a KeyError of the user's own dict naming no model type)."""
    package = ENTRIES.get(entry.id)
    if package is None or not drafts:
        return drafts
    from envdoctor.knowledge import knowledge
    from envdoctor.knowledge.models import DISPLAY, has, lookup, releases_with

    names = _names(package, m.text)
    if not names:
        return drafts
    found = [s for s in (lookup(package, n) for n in names) if s is not None]
    if not found:
        return drafts  # no table shipped: the entry's own answer
    known = next((s for s in found if s.known), found[0])
    keyerror = entry.id == "transformers-model-type-keyerror"
    if keyerror and log.by_sig.get("known-transformers-model-type-not-recognized"):
        return []  # the ValueError transformers re-raises it as tells the same refusal
    in_frame = keyerror and any("configuration_auto.py" in line for line in m.context)
    if keyerror and not in_frame and not known.known:
        return []  # a bare KeyError naming no model type: not this refusal
    inspected = "failed to be inspected" in m.text
    shown = _shown(log, package)
    there = has(package, known.name, shown) if shown else None
    kb = knowledge()
    name = f"{'architecture' if package == 'vllm' else 'model type'} {known.name}"
    pkg = DISPLAY[package]
    fix, said = "", ""
    certain = not keyerror or in_frame
    if inspected:
        if known.known:  # vLLM says so only when its registry has one of the architectures
            return [_inspected(d, known, entry, log) for d in drafts]
        body = f"{name}: " + _horizon(package, known.newest)
        certain = False
    elif (until := _UNTIL.search(m.text)) or (
        known.removed and (not shown or not versions.below(shown, known.removed))
    ):
        if until:  # vLLM's own word on the last release that had it
            body = f"{pkg} supported {name} until {until[1]} and no longer does"
            fix = f"pip install '{package}<={until[1]}'"
        else:
            body = (
                f"{pkg} removed {name} in {known.removed} (it is in the releases before, from {known.first})"
            )
            fix = f"pip install '{package}<{known.removed}'"
        if known.plugin:
            fix += f", or install the out-of-tree plugin that holds it: {known.plugin}"
    elif known.known:
        body = (
            f"{name} is in every {pkg} release envdoctor read ({known.read()}; it may be older)"
            if known.first == known.oldest
            else f"{name} is in {pkg} from {known.first} (envdoctor read {known.read()})"
        )
        if there is True:
            body += (
                f"; the log's {pkg} {shown} has it, so the process that raised ran another {pkg} "
                "(a worker's or server's environment)"
            )
            certain = False
        elif shown:
            body += f"; the log shows {pkg} {shown}, older than that"
        assert known.first is not None
        if package == "vllm":
            fix, said = _vllm_fix(known.first, log, kb)
        else:
            fix, said = _transformers_fix(known.first, log, kb, releases_with(package, known.name))
        if said:
            body += f" ({said})"
    else:
        body = f"{name}: " + _horizon(package, known.newest)
        fix = (
            "for the model's own code pass trust_remote_code (vLLM: --trust-remote-code, and "
            "--model-impl transformers where the vLLM offers it); else a release newer than envdoctor knows"
        )
    out = []
    for d in drafts:
        f = d.finding
        evidence = dict(f.evidence)
        evidence["model"] = {
            "package": package,
            "name": known.name,
            "first": known.first,
            "removed": known.removed,
            "read": known.read(),
        }
        d.finding = Finding(
            f.rule,
            Severity.ERROR if certain else Severity.WARNING,
            f"{pkg} refused {name}: {body} — {f.message}",
            fix or f.fix,
            evidence,
        )
        out.append(d)
    return out
