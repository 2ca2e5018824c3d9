"""The conformance setups on disk: read them, build their snapshots, apply mutations.

Each folder under ``setups/`` is one published GRPO setup (docs/conformance.md):
``source.yaml`` (where it was published, the era, the machine), ``case.yaml`` (the launch lines
as published, what envdoctor is run with, the expected result, the mutations), ``facts.json``
(the machine's snapshot, built by :func:`build_facts` from ``eras/<era>.json``) and the config
files exactly as published, at their paths in the source repository.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
SETUPS = HERE / "setups"
ERAS = HERE / "eras"

#: GPU models as NVML reports them.
GPU_MODELS = {
    "H100-80GB": {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "compute_capability": "9.0"},
    "H200": {"name": "NVIDIA H200", "memory_total_mib": 143771, "compute_capability": "9.0"},
}


@dataclass
class Case:
    """One run of ``envdoctor check`` and what it must give."""

    setup: str
    name: str  # "published", "<mutation>", "<mutation>+fix"
    launch: str
    server: str | None
    config: str | None
    facts: dict[str, Any]
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    expect: dict[str, Any] | str = "clean"
    #: catalogue entries (KNF001 ids) this setup's stack is known to hit, shown as warnings
    known_failures: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.setup}:{self.name}"


def blob_sha(data: bytes) -> str:
    """The git blob id of a file's bytes (what GitHub's tree at the commit lists)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def setup_dirs() -> list[Path]:
    return sorted(p for p in SETUPS.iterdir() if (p / "case.yaml").is_file())


def read_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def build_facts(setup: Path) -> dict[str, Any]:
    """The snapshot of the machine a setup was written for, from its era and source.yaml."""
    src = read_yaml(setup / "source.yaml")
    era = json.loads((ERAS / f"{src['era']}.json").read_text(encoding="utf-8"))
    packages = copy.deepcopy(era["packages"])
    for name, pkg in (src.get("era_changes") or {}).items():
        if pkg is None:
            packages.pop(name, None)
        else:
            packages[name] = {k: v for k, v in pkg.items() if k in ("version", "requires")}
    machine = src["machine"]
    model = GPU_MODELS[machine["gpu"]]
    procs = {int(k): v for k, v in (machine.get("processes") or {}).items()}
    gpus = []
    for i in range(int(machine["gpus"])):
        used = sum(int(p["used_mib"]) for p in procs.get(i, []))
        gpus.append(
            {
                "index": i,
                "uuid": f"GPU-{i:08x}-c0f0-4e11-9a00-{i:012x}",
                "name": model["name"],
                "memory_total_mib": model["memory_total_mib"],
                "memory_used_mib": used,
                "memory_free_mib": model["memory_total_mib"] - used,
                "compute_capability": model["compute_capability"],
                "mig": False,
                "pci_bus_id": f"00000000:{0x18 + 0x10 * i:02X}:00.0",
                "processes": procs.get(i, []),
            }
        )
    return {
        "schema": "envdoctor.facts/1",
        "python": era["python"],
        "platform": "Linux-x86_64",
        "hostname": machine.get("hostname", setup.name),
        "driver": dict(machine["driver"]),
        "nvml_error": None,
        "packages": dict(sorted(packages.items())),
        "gpus": gpus,
        "env": dict(machine.get("env") or {}),
    }


def mutate_facts(facts: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """Apply a mutation's ``facts`` changes: packages, GPU count, GPU processes, env."""
    out = copy.deepcopy(facts)
    if change.get("strip_requires"):  # a snapshot that lists versions only
        out["packages"] = {k: {"version": v["version"]} for k, v in out["packages"].items()}
    for name, pkg in (change.get("packages") or {}).items():
        if pkg is None:
            out["packages"].pop(name, None)
        elif isinstance(pkg, str):
            out["packages"].setdefault(name, {})["version"] = pkg
        else:
            out["packages"][name] = pkg
    if "gpus" in change:
        n = int(change["gpus"])
        while len(out["gpus"]) < n:
            extra = copy.deepcopy(out["gpus"][-1])
            extra.update(
                index=len(out["gpus"]),
                processes=[],
                memory_used_mib=0,
                memory_free_mib=extra["memory_total_mib"],
            )
            out["gpus"].append(extra)
        out["gpus"] = out["gpus"][:n]
    for idx, procs in (change.get("processes") or {}).items():
        gpu = out["gpus"][int(idx)]
        gpu["processes"] = procs
        gpu["memory_used_mib"] = sum(int(p["used_mib"]) for p in procs)
        gpu["memory_free_mib"] = gpu["memory_total_mib"] - gpu["memory_used_mib"]
    out["env"].update(change.get("env") or {})
    return out


def join_continuations(text: str) -> str:
    """A shell snippet's backslash-continued lines as one line (what the shell runs)."""
    return re.sub(r"[ \t]*\\\n[ \t]*", " ", text.strip())


def cases() -> list[Case]:
    """Every setup as published, and each mutation with and without its fix."""
    out: list[Case] = []
    for d in setup_dirs():
        case = read_yaml(d / "case.yaml")
        facts = json.loads((d / "facts.json").read_text(encoding="utf-8"))
        check = case["check"]
        base = Case(
            setup=d.name,
            name="published",
            launch=check["launch"],
            server=check.get("server"),
            config=check.get("config"),
            facts=facts,
            expect=case.get("expect", "clean"),
            known_failures=tuple(case.get("known_failures") or ()),
        )
        out.append(base)
        for mut in case.get("mutations") or []:
            broken = _apply(base, mut["change"], f"{mut['id']}", mut["expect"])
            out.append(broken)
            out.append(_apply(broken, mut["fix"], f"{mut['id']}+fix", mut.get("fixed", "clean")))
    return out


def _apply(case: Case, change: dict[str, Any], name: str, expect: Any) -> Case:
    files = copy.deepcopy(case.files)
    for path, values in (change.get("files") or {}).items():
        files.setdefault(path, {}).update(values)
    return Case(
        setup=case.setup,
        name=name,
        launch=change.get("launch", case.launch),
        server=change.get("server", case.server),
        config=change.get("config", case.config),
        facts=mutate_facts(case.facts, change.get("facts") or {}),
        files=files,
        expect=expect,
        known_failures=case.known_failures,
    )


def cli_args(case: Case, facts_path: Path) -> list[str]:
    """``envdoctor check`` arguments for a case (the trainer's line after ``--``)."""
    args = ["check", "--facts", str(facts_path), "--format", "json"]
    if case.config:
        args += ["--config", case.config]
    if case.server:
        args += ["--launch", case.server]
    return [*args, "--", *shlex.split(case.launch)]
