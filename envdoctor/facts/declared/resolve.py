"""A declared stack as facts: exact versions become packages (with the requirements the curated
knowledge records for them), ranges stay ranges, judged by their bounds (checks/declared.py).

vLLM is the one range resolved here, the way pip does it: when torch is pinned, pip can only
install a vLLM release built for that torch, so the newest such release in the declared range
is what gets installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envdoctor import versions
from envdoctor.facts.declared.interface import Declaration, Found
from envdoctor.facts.declared.ranges import known_in, meet
from envdoctor.facts.interface import Facts, Package
from envdoctor.facts.packages import requirement_name

if TYPE_CHECKING:
    from envdoctor.knowledge import Knowledge


@dataclass
class Entry:
    """Everything the repository says about one package."""

    name: str
    decls: list[Declaration] = field(default_factory=list)
    version: str | None = None  # exact: pinned, locked, assumed, resolved or placed (git)
    how: str = "range"  # pinned | locked | assumed | resolved | git | range
    placed: str = ""  # a git reference: where it stands among the releases, or why it is not placed

    @property
    def spec(self) -> str:
        return ",".join(sorted({d.specifier for d in self.decls if d.specifier}))

    @property
    def origin(self) -> Declaration | None:
        return self.decls[0] if self.decls else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "how": self.how,
            "specifier": self.spec,
            "declared": [d.said for d in self.decls],
        }


def entries(found: Found, assume: dict[str, str]) -> dict[str, Entry]:
    """Declarations grouped by package; lock pins win over requirements, ``--assume`` over all."""
    out: dict[str, Entry] = {}
    for d in found.declarations:
        out.setdefault(d.name, Entry(d.name)).decls.append(d)
    for e in out.values():
        locked = [d.pinned for d in e.decls if d.locked and d.pinned]
        pinned = [d.pinned for d in e.decls if d.pinned]
        if locked:
            e.version, e.how = locked[0], "locked"
        elif pinned:
            e.version, e.how = pinned[0], "pinned"
        elif e.name == "trl":
            _place_git(e)
    for name, version in assume.items():
        e = out.setdefault(name, Entry(name))
        if e.how == "git" and e.version == version:
            continue  # --assume agrees with the pinned commit: keep the commit (its exact keys)
        e.version, e.how = version, "assumed"
    return out


def _place_git(e: Entry) -> None:
    """TRL pinned by a git reference: the version its commit installs as (the table of TRL's
    main branch in rules/knowledge/trl_commits.txt), else said as not placed."""
    ref = next((d for d in e.decls if d.url), None)
    if ref is None or any(d.specifier for d in e.decls):
        return
    if not ref.ref:
        e.placed = f"{ref.said}: no commit or tag named: TRL's default branch, its release is not decided"
        return
    from envdoctor.knowledge.trl_commits import place

    where = place(ref.ref)
    e.placed = f"{ref.said}: {where.said()}"
    if where.version is not None:
        e.version, e.how = where.version, "git"


#: distinct specifiers of one package compared pairwise (a real package has one to three)
MAX_COMPARED = 64


def conflicts(
    stack: dict[str, Entry], projects: dict[str, str] | None = None
) -> list[tuple[Entry, Declaration, Declaration]]:
    """Pairs of declarations of one package that no single version satisfies, within one
    environment: the same project (``projects``: file → project; two sub-projects of one
    repository are two installs), and never two entries of one lock file (uv.lock keeps one
    entry per resolution fork: ``triton`` 3.3.0 for Linux, 3.3.1 for macOS). Compared: the first
    declaration of each distinct specifier per project, the first ``MAX_COMPARED`` of them
    (10,000 copies of one line are one comparison, not 50 million)."""
    projects = projects or {}
    out = []
    for e in stack.values():
        if e.how == "assumed":
            continue
        groups: dict[str, dict[str, Declaration]] = {}
        for d in e.decls:
            if d.specifier and not d.via:  # implied ones: PKG004 / DCL002 judge them
                groups.setdefault(projects.get(d.file, ""), {}).setdefault(d.specifier, d)
        for first in groups.values():
            decls = list(first.values())[:MAX_COMPARED]
            clash = next(
                (
                    (a, b)
                    for i, a in enumerate(decls)
                    for b in decls[i + 1 :]
                    if not (a.locked and b.locked and a.file == b.file)
                    and meet(a.specifier, b.specifier) is None
                ),
                None,
            )
            if clash is not None:
                out.append((e, *clash))
    return out


def extra_spec(text: str | None) -> str:
    """The leading specifier of a knowledge note such as ``'>=0.8.3 (python < 3.13)'``."""
    m = re.match(r"^\s*((?:[<>=!~]=?\s*[\w.*+]+\s*,?\s*)+)", str(text or ""))
    spec = m.group(1).strip().rstrip(",") if m else ""
    return spec if spec and versions.spec(spec) is not None else ""


def wanted_by_extras(stack: dict[str, Entry], kb: Knowledge) -> None:
    """``trl[vllm]`` declares vLLM too: add the extra's range (from TRL's line in trl.yaml)."""
    trl = stack.get("trl")
    if trl is None or not any("vllm" in d.extras for d in trl.decls):
        return
    decl = next(d for d in trl.decls if "vllm" in d.extras)
    line = kb.trl_line(trl.version) if trl.version else None
    spec = extra_spec((line or {}).get("vllm_extra"))
    vllm = stack.setdefault("vllm", Entry("vllm"))
    vllm.decls.append(Declaration("vllm", spec, decl.file, decl.line, via=decl.text))


def resolve_vllm(stack: dict[str, Entry], kb: Knowledge) -> list[str]:
    """With torch pinned, the vLLM releases of the declared range built for it; the newest is
    what pip installs (returned: every candidate, oldest first)."""
    vllm, torch = stack.get("vllm"), stack.get("torch")
    if vllm is None or vllm.version or torch is None or not torch.version:
        return []
    pins = kb.vllm.get("torch_pins") or []
    base = versions.parse(torch.version)
    fits = [str(p["vllm"]) for p in pins if base is not None and str(p.get("torch")) == base.public]
    candidates = known_in(vllm.spec or ">=0", fits)
    if candidates:
        vllm.version, vllm.how = candidates[-1], "resolved"
    return candidates


def requires(name: str, version: str, kb: Knowledge) -> list[str] | None:
    """Requires-Dist lines the knowledge records for a release (None when it has none)."""
    if name == "vllm":
        pin = next((p for p in kb.vllm.get("torch_pins") or [] if str(p.get("vllm")) == version), None)
        if pin is None:
            return None
        out = [f"torch=={pin['torch']}"]
        if pin.get("transformers"):
            out.append(f"transformers{pin['transformers']}")
        if pin.get("requires_python"):
            out.append(f"python{pin['requires_python']}")  # Requires-Python, as a requirement
        return out
    if name == "trl":
        line = kb.trl_line(version)
        if line is None:
            return None
        out = [f"{k}{v}" for k, v in (line.get("requires") or {}).items()]
        spec = extra_spec(line.get("vllm_extra"))
        if spec:
            out.append(f'vllm{spec}; extra == "vllm"')
        return out
    return None


def stack_facts(found: Found, assume: dict[str, str], kb: Knowledge, source: str) -> Facts:
    """Facts of the declared stack: exact versions as packages; ``extra["declared"]`` keeps
    every entry (ranges included) for the range rules, with the file and line of each."""
    stack = entries(found, assume)
    wanted_by_extras(stack, kb)
    candidates = resolve_vllm(stack, kb)
    exact = {n: e.version for n, e in stack.items() if e.version}
    packages: dict[str, Package] = {}
    for name, version in exact.items():
        reqs = requires(name, version, kb)
        if reqs is not None:  # only what can be judged: requirements on exactly known packages
            reqs = [r for r in reqs if requirement_name(r) in exact]
        packages[name] = Package(version=version, requires=reqs)
    facts = Facts(packages=packages, source=source, nvml_error="not collected: the hook checks config files")
    notes = list(found.notes)
    for e in stack.values():
        if e.placed:
            notes.append(
                f"{e.name}: {e.placed}"
                + (f"; judged as {e.name} {e.version}" if e.version else f"; no {e.name} release is judged")
            )
    facts.extra["declared"] = {
        "stack": stack,
        "vllm_candidates": candidates,
        "files": found.files,
        "projects": found.projects,
        "notes": notes,
        "local_pins": []
        if found.index_elsewhere
        else [
            {"name": d.name, "version": d.pinned, "file": d.file, "line": d.line} for d in found.local_pins
        ],
        "index_elsewhere": found.index_elsewhere,
    }
    facts.extra["trl_installed"] = True  # the package rules judge the declared stack
    return facts
