"""PKG004's severity model over rules/knowledge/requirements.yaml and vllm.yaml: which unmet
requirement stops a run (compiled ABI, the run's import path) and which pip check alone minds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envdoctor import versions
from envdoctor.knowledge import Knowledge
from envdoctor.pep508 import default_environment

if TYPE_CHECKING:  # an annotation only: knowledge stays below facts
    from envdoctor.facts.interface import Package

#: Distributions whose requirements are read (the training stack; PKG004's sources).
SOURCES = (
    "trl",
    "vllm",
    "transformers",
    "accelerate",
    "torch",
    "torchvision",
    "peft",
    "deepspeed",
    "datasets",
    "xformers",
    "flash-attn",
    "liger-kernel",
    "bitsandbytes",
)
#: the vLLM release below which TRL's GRPO fails (PKG002): the device fix TRL 0.15.0 asks for
#: (huggingface/trl#2766, for huggingface/trl#2745)
VLLM_FLOOR = "0.7.1"


def curated_requires(kb: Knowledge, src: str, version: str) -> list[str]:
    """Requires-Dist lines a snapshot left out, from the curated pins of rules/knowledge/vllm.yaml
    (each vLLM release pins one torch and a transformers range) and the ``requires`` of TRL's
    release lines in rules/knowledge/trl.yaml (read from each line's pyproject.toml / setup.py)."""
    if src == "trl":
        line = kb.trl_line(version) or {}
        return [f"{name}{spec}" for name, spec in (line.get("requires") or {}).items() if spec]
    if src != "vllm":
        return []
    base = versions.parse(version)
    pin = next(
        (
            p
            for p in kb.vllm.get("torch_pins", [])
            if base is not None and versions.parse(str(p.get("vllm"))) == versions.parse(base.public)
        ),
        None,
    )
    if pin is None:
        return []
    lines = [f"torch=={pin['torch']}"]
    if pin.get("transformers"):
        lines.append(f"transformers{pin['transformers']}")
    return lines


def requirement_lines(kb: Knowledge, src: str, pkg: Package) -> tuple[list[str], bool]:
    """``(lines, curated)``: the package's Requires-Dist, or the curated pins when it has none."""
    if pkg.requires is not None:
        return list(pkg.requires), False
    lines = curated_requires(kb, src, pkg.version)
    return lines, bool(lines)


def _matches(entry: dict[str, Any], src: str, src_version: str) -> bool:
    sources = entry.get("sources") or [entry.get("source")]
    if src not in sources:
        return False
    span = entry.get(src) or ""
    return not span or versions.satisfies(src_version, str(span)) is True


def weight(kb: Knowledge, src: str, src_version: str, target: str) -> tuple[str, dict[str, Any] | None]:
    """How an unmet ``src`` → ``target`` requirement matters: ``binds`` (compiled ABI),
    ``imports`` (on the run's import path) or ``other``; with the knowledge entry."""
    table = kb.requirements
    for kind in ("binds", "imports"):
        for entry in table.get(kind, []):
            if target in (entry.get("targets") or []) and _matches(entry, src, src_version):
                return kind, entry
    return "other", None


def harmless(kb: Knowledge, src: str, src_version: str, target: str, installed: str) -> dict[str, Any] | None:
    """A measured-harmless entry for this unmet pin, if one was seen on a healthy run."""
    have = versions.parse(installed)
    entries: list[dict[str, Any]] = kb.requirements.get("measured_harmless", [])
    for entry in entries:
        seen = versions.parse(str(entry.get("installed")))
        if (
            entry.get("target") == target
            and _matches(entry, src, src_version)
            and seen is not None
            and have is not None
            and have.release[:2] == seen.release[:2]
        ):
            return entry
    return None


def marker_env(python: str) -> dict[str, str]:
    """The environment markers are evaluated in: this interpreter's, with the checked machine's
    Python version (a snapshot may come from another Python)."""
    env = {key: str(value) for key, value in default_environment().items()}
    v = versions.parse(python.split()[0] if python else None)
    if v is not None and len(v.release) >= 2:
        env["python_version"] = f"{v.release[0]}.{v.release[1]}"
        env["python_full_version"] = v.public
    return env


def _judged(scanned: list[str], version: str) -> list[str]:
    """The scanned importer releases that judge ``version``: itself, else the scanned release
    below and the one above it (a patch release or a development build between two scanned ones
    is judged by both neighbours); none outside the scanned span."""
    v = versions.parse(version)
    order = sorted((p, s) for s in scanned if (p := versions.parse(s)) is not None)
    if v is None or not order:
        return []
    exact = [s for p, s in order if p == v]
    if exact:
        return exact[:1]
    below = [s for p, s in order if p < v][-1:]
    above = [s for p, s in order if p > v][:1]
    return below + above if below and above else []


def api_verdict(
    kb: Knowledge, src: str, src_version: str, target: str, installed: str
) -> dict[str, Any] | None:
    """What rules/knowledge/requirement_api.yaml (scripts/derive_requirement_api.py) says of
    ``src`` ``src_version`` beside ``target`` ``installed``: ``{"lacks": [names], "judged": [...]}``
    where every judging release of ``src`` uses a name, on its run's import path (TRL: GRPO's;
    vLLM: its import and engine start), that the installed release lacks (an ImportError or
    AttributeError at start); ``{"lacks": [], "names": n, ...}`` where every name each judging
    release imports is there; None where the data does not cover the pair (a release outside it,
    the judging releases disagree, or a name the history does not know leaves "all there"
    unproved). Read only when asked."""
    api = kb.requirement_api
    rows = (api.get("importers") or {}).get(src) or {}
    if installed not in ((api.get("scanned") or {}).get(target) or ()):
        return None
    judged = _judged([str(r) for r in rows], src_version)
    verdicts: list[tuple[list[str], int]] = []
    unknown = False
    for release in judged:
        row = ((rows.get(release) or {}).get(target)) or {}
        if not row:
            return None
        unknown = unknown or bool(row.get("unknown"))
        lacking = row.get("lacking") or {}
        missing = [
            name
            for name, specs in lacking.items()
            if any(versions.satisfies(installed, str(spec)) is True for spec in specs)
        ]
        verdicts.append((missing, int(row.get("names") or 0)))
    if not verdicts:
        return None
    if all(missing for missing, _ in verdicts):
        # the names every judging release lacks (both neighbours of a patch release import them),
        # else each one's: both fail, on different names
        common = set.intersection(*(set(missing) for missing, _ in verdicts))
        names = sorted(common or {n for missing, _ in verdicts for n in missing})
        return {"lacks": names, "judged": judged}  # a known missing name: whatever the unknown one
    if unknown or any(missing for missing, _ in verdicts):
        return None  # the neighbours disagree, or a name in no scanned release: no evidence
    return {"lacks": [], "names": max(n for _, n in verdicts), "judged": judged}


def api_floor(kb: Knowledge, src: str, src_version: str, target: str, strict: bool = True) -> str | None:
    """The API floor of ``target`` that ``src`` ``src_version`` imports on its run's path without
    declaring it (rules/knowledge/requirement_floors.yaml: TRL 0.29-1.13's FSDPModule from torch
    2.6): the highest floor of the judging releases (_judged). ``strict`` (a finding's evidence):
    None unless every judging release has one; otherwise (a plan that must hold: TRL 0.29.0,
    between 0.28.0 without a floor and 0.29.1 with one) any judging release's floor counts.
    None where the data does not cover the release."""
    entry = ((kb.requirement_floors.get("floors") or {}).get(src)) or {}
    table = entry.get(target) or {}
    judged = _judged([str(r) for r in entry.get("releases") or ()], src_version)
    found = [table.get(r) for r in judged]
    if not found or (strict and any(f is None for f in found)) or not any(found):
        return None
    return max((str(f) for f in found if f), key=versions.sort_key)


def below_api_floor(kb: Knowledge, src: str, src_version: str, target: str, installed: str) -> str | None:
    """The API floor (api_floor) ``installed`` (``2.4.1+cu124``: its local label aside) is below,
    else None."""
    found = api_floor(kb, src, src_version, target)
    return found if found is not None and versions.below(installed, found) else None


def imported_at_import(kb: Knowledge, src: str, src_version: str, optional: str) -> str | None:
    """The import of ``optional`` (vLLM) that ``src`` ``src_version``'s run path makes whenever it
    is installed, under its availability guard alone (rules/knowledge/requirement_floors.yaml
    ``at_import``: ``if is_vllm_available(): from vllm… import …`` in a module ``from trl import
    GRPOTrainer`` loads), as ``"module: statement"``; None where the judging releases (_judged)
    do not all make one, or the data does not cover the release."""
    table = ((kb.requirement_floors.get("at_import") or {}).get(src) or {}).get(optional) or {}
    judged = _judged([str(r) for r in table], src_version)
    found = [table.get(r) for r in judged]
    return str(found[0]) if found and all(found) else None


def trainer_vllm_imports(kb: Knowledge, trl_version: str, trainer: str, vllm: str) -> list[str] | None:
    """The vLLM imports ``from trl import <trainer>`` and the trainer's code make at TRL
    ``trl_version`` with vLLM ``vllm`` installed (rules/knowledge/trl_trainer_vllm.yaml, derived by
    scripts/derive_trainer_vllm_imports.py: an import under TRL's own vLLM version test counts only
    where the installed vLLM passes it), as ``"module: statement"``; [] where none; None where the
    data does not cover the trainer or the release (the judging releases, _judged, disagree)."""
    table = ((kb.trl_trainer_vllm.get("trainers") or {}).get(trainer)) or {}
    judged = _judged([str(r) for r in table], trl_version)
    if not judged:
        return None
    seen = []
    for release in judged:
        rows = [r for r in table.get(release) or () if isinstance(r, dict)]
        seen.append(
            [
                str(r.get("at"))
                for r in rows
                if not r.get("vllm") or versions.satisfies(vllm, str(r.get("vllm"))) is not False
            ]
        )
    if any(bool(s) != bool(seen[0]) for s in seen):
        return None
    return seen[0]
