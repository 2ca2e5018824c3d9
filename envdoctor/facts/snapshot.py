"""The versioned JSON snapshot of facts: ``envdoctor collect`` writes it, ``--facts`` reads it.

Format: docs/snapshot.md. Loading is tolerant of missing keys (hand-written snapshots) and
strict about types: anything malformed is an ``InputError`` naming the file and the key.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from envdoctor.errors import InputError, read_input_text
from envdoctor.facts.environment import mask
from envdoctor.facts.interface import (
    PATH_KINDS,
    SCHEMA,
    Copy,
    Driver,
    Facts,
    Gpu,
    GpuProcess,
    Package,
    normalize_name,
)
from envdoctor.facts.packages import MAX_REQUIRES, MAX_REQUIRES_TOTAL, requirement_problem
from envdoctor.parsing import parse_json

_CC = re.compile(r"^\d{1,2}\.\d{1,2}$")
MAX_BYTES = 64 * 1024 * 1024
#: Characters of one name, version, hostname, uuid… and of one environment value.
MAX_NAME = 1024
MAX_VALUE = 65536


def to_dict(facts: Facts) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        **_taken(facts),
        "python": facts.python,
        "platform": facts.platform,
        "hostname": facts.hostname,
        "driver": {"version": facts.driver.version, "cuda": facts.driver.cuda},
        "nvml_error": facts.nvml_error,
        "packages": {
            name: (
                {"version": p.version, "requires": p.requires}
                if p.requires is not None
                else {"version": p.version}
            )
            | ({"origin": p.origin} if p.origin else {})
            | (
                {
                    "path": p.path,
                    "path_kind": p.path_kind,
                    "other_copies": [
                        {"version": c.version, "path": c.path, "path_kind": c.path_kind}
                        for c in p.other_copies
                    ],
                }
                if p.other_copies
                else {}
            )
            for name, p in sorted(facts.packages.items())
        },
        **({"absent": list(facts.extra["absent"])} if facts.extra.get("absent") else {}),
        "gpus": None
        if facts.gpus_unknown
        else [
            {
                "index": g.index,
                "uuid": g.uuid,
                "name": g.name,
                "memory_total_mib": g.memory_total_mib,
                "memory_used_mib": g.memory_used_mib,
                "memory_free_mib": g.memory_free_mib,
                "compute_capability": g.compute_capability,
                "mig": g.mig,
                "mig_devices": g.mig_devices,
                "pci_bus_id": g.pci_bus_id,
                "processes": [{"pid": p.pid, "name": p.name, "used_mib": p.used_mib} for p in g.processes],
            }
            for g in facts.gpus
        ],
        "env": mask(facts.env),
    }


def _taken(facts: Facts) -> dict[str, str]:
    """``envdoctor`` (the version that took the snapshot) and ``taken_at`` (UTC, ISO 8601): a
    snapshot read back keeps its own, a live one gets this envdoctor's and the time now."""
    kept = facts.extra.get("snapshot") or {}
    if not facts.live and kept:
        return {k: v for k, v in kept.items() if k in ("envdoctor", "taken_at") and isinstance(v, str)}
    if not facts.live:
        return {}  # an old snapshot (before 0.1.0 wrote them): nothing invented
    import datetime

    from envdoctor import __version__

    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return {"envdoctor": __version__, "taken_at": now.isoformat().replace("+00:00", "Z")}


def dumps(facts: Facts) -> str:
    """The snapshot as JSON text; every string redacted (a token in a URL, a query or a
    variable of any name), as everything else that leaves envdoctor."""
    from envdoctor.redact import scrub

    return json.dumps(scrub(to_dict(facts), escape=False, limit=10**9), indent=2) + "\n"


class _Reader:
    """Typed access to a parsed snapshot that reports the offending key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str) -> InputError:
        return InputError(self.source, f"key '{key}': {problem}")

    def get(
        self, obj: dict[str, Any], key: str, kinds: tuple[type, ...], where: str, default: Any = None
    ) -> Any:
        value = obj.get(key)
        if value is None:
            return default
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise self.fail(f"{where}{key}", f"expected {names}, got {type(value).__name__}")
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value < 2**53:
            raise self.fail(
                f"{where}{key}",
                f"out of range ({str(value)[:20]}…)" if value >= 2**53 else f"negative ({value})",
            )
        if isinstance(value, str):
            limit = MAX_VALUE if where.startswith("env") else MAX_NAME
            if len(value) > limit:
                raise self.fail(f"{where}{key}", f"{len(value):,} characters (at most {limit:,})")
            value = value.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
        return value


#: names a snapshot's ``absent`` list holds at most
MAX_ABSENT = 500


def from_dict(data: Any, source: str = "<snapshot>") -> Facts:
    r = _Reader(source)
    if not isinstance(data, dict):
        raise InputError(source, f"expected a JSON object, got {type(data).__name__}")
    schema = data.get("schema")
    if schema != SCHEMA:
        raise InputError(
            source, f"unknown schema {schema!r}; this envdoctor reads {SCHEMA!r} (see docs/snapshot.md)"
        )
    facts = Facts(source=source)
    taken = {k: r.get(data, k, (str,), "", None) for k in ("envdoctor", "taken_at")}
    if any(taken.values()):  # optional: snapshots before these keys are read as they were
        facts.extra["snapshot"] = {k: v for k, v in taken.items() if v}
    facts.python = str(r.get(data, "python", (str,), "", ""))
    facts.platform = str(r.get(data, "platform", (str,), "", ""))
    facts.hostname = str(r.get(data, "hostname", (str,), "", ""))
    facts.nvml_error = r.get(data, "nvml_error", (str,), "", None)
    driver = r.get(data, "driver", (dict,), "", {})
    facts.driver = Driver(
        version=r.get(driver, "version", (str,), "driver.", None),
        cuda=r.get(driver, "cuda", (str,), "driver.", None),
    )
    total_requires = 0
    for name, pkg in r.get(data, "packages", (dict,), "", {}).items():
        if len(name) > 200:
            raise r.fail(f"packages.{name[:40]}…", f"a package name of {len(name):,} characters")
        where = f"packages.{name}."
        if isinstance(pkg, str):  # {"vllm": "0.7.2"} is accepted too
            pkg = {"version": pkg}
        if not isinstance(pkg, dict):
            raise r.fail(f"packages.{name}", "expected an object with 'version'")
        version = r.get(pkg, "version", (str,), where, None)
        if version is None:
            raise r.fail(f"{where}version", "missing")
        requires = r.get(pkg, "requires", (list,), where, None)
        if requires is not None and not all(isinstance(x, str) for x in requires):
            raise r.fail(f"{where}requires", "expected a list of strings")
        total_requires += len(requires or [])
        if len(requires or []) > MAX_REQUIRES or total_requires > MAX_REQUIRES_TOTAL:
            raise r.fail(
                f"{where}requires",
                f"{len(requires or []):,} lines ({total_requires:,} "
                f"so far): more than {MAX_REQUIRES:,} for one package or "
                f"{MAX_REQUIRES_TOTAL:,} in all (collect writes a few hundred)",
            )
        for j, line in enumerate(requires or []):
            problem = requirement_problem(line)
            if problem:
                raise r.fail(f"{where}requires[{j}]", problem)
        origin = r.get(pkg, "origin", (str,), where, None)
        facts.packages[normalize_name(str(name))] = Package(
            version=version,
            requires=requires,
            origin=origin[:500] if origin else None,
            **_copies(r, pkg, where),
        )
    absent = r.get(data, "absent", (list,), "", None)
    if absent is not None:  # a hand-written snapshot's word that these are not installed
        if len(absent) > MAX_ABSENT or not all(isinstance(x, str) and 0 < len(x) <= 200 for x in absent):
            raise r.fail("absent", f"expected at most {MAX_ABSENT} distribution names")
        facts.extra["absent"] = sorted({normalize_name(x) for x in absent} - set(facts.packages))
    gpus = r.get(data, "gpus", (list,), "", [])
    facts.gpus_unknown = "gpus" in data and data["gpus"] is None  # null: not known; []: none
    seen: set[int] = set()  # a set: 30,000 GPUs load in linear time
    for i, g in enumerate(gpus):
        where = f"gpus[{i}]."
        if not isinstance(g, dict):
            raise r.fail(f"gpus[{i}]", "expected an object")
        index = r.get(g, "index", (int,), where, None)
        if index is None:
            raise r.fail(f"{where}index", "missing")
        if index in seen:
            raise r.fail(f"{where}index", f"GPU {index} is listed twice")
        seen.add(index)
        procs = []
        for j, p in enumerate(r.get(g, "processes", (list,), where, [])):
            if not isinstance(p, dict) or not isinstance(p.get("pid"), int):
                raise r.fail(f"{where}processes[{j}]", "expected an object with an integer 'pid'")
            pw = f"{where}processes[{j}]."
            procs.append(
                GpuProcess(
                    pid=p["pid"],
                    name=str(r.get(p, "name", (str,), pw, "")),
                    used_mib=r.get(p, "used_mib", (int,), pw, None),
                )
            )
        cc = r.get(g, "compute_capability", (str, int, float), where, None)
        if cc is not None and not _CC.match(str(cc)):
            raise r.fail(
                f"{where}compute_capability", f'expected MAJOR.MINOR such as "9.0", got {str(cc)[:20]!r}'
            )
        total = r.get(g, "memory_total_mib", (int,), where, None)
        if total == 0:
            raise r.fail(f"{where}memory_total_mib", "0: a GPU has memory (null if unknown)")
        facts.gpus.append(
            Gpu(
                index=index,
                uuid=r.get(g, "uuid", (str,), where, ""),
                name=r.get(g, "name", (str,), where, ""),
                memory_total_mib=total,
                memory_used_mib=r.get(g, "memory_used_mib", (int,), where, None),
                memory_free_mib=r.get(g, "memory_free_mib", (int,), where, None),
                compute_capability=None if cc is None else str(cc),
                mig=bool(r.get(g, "mig", (bool,), where, False)),
                mig_devices=[str(x)[:MAX_NAME] for x in r.get(g, "mig_devices", (list,), where, [])],
                pci_bus_id=r.get(g, "pci_bus_id", (str,), where, ""),
                processes=procs,
            )
        )
    env = r.get(data, "env", (dict,), "", {})
    for k, v in env.items():
        if len(str(k)) > 200:
            raise r.fail(f"env.{str(k)[:40]}…", f"a variable name of {len(str(k)):,} characters")
        if v is not None and not isinstance(v, (str, int, float, bool)):
            raise r.fail(f"env.{k}", f"expected a string, got {type(v).__name__}")
        if isinstance(v, str) and len(v) > MAX_VALUE:
            raise r.fail(f"env.{k}", f"{len(v):,} characters (at most {MAX_VALUE:,})")
    # a hand-written snapshot may hold a token: masked as `collect` would have
    facts.env = mask({str(k): str(v) for k, v in env.items() if v is not None})
    return facts


def _kind(r: _Reader, obj: dict[str, Any], where: str) -> str:
    kind = r.get(obj, "path_kind", (str,), where, "environment")
    if kind not in PATH_KINDS:
        raise r.fail(f"{where}path_kind", f"expected one of {', '.join(PATH_KINDS)}, got {str(kind)[:40]!r}")
    return str(kind)


def _copies(r: _Reader, pkg: dict[str, Any], where: str) -> dict[str, Any]:
    """``path``, ``path_kind`` and ``other_copies`` of a package installed more than once
    (optional: snapshots before them, and packages installed once, have none)."""
    raw = r.get(pkg, "other_copies", (list,), where, [])
    if not raw:
        return {}
    if len(raw) > 50:
        raise r.fail(f"{where}other_copies", f"{len(raw):,} copies (at most 50)")
    copies = []
    for i, c in enumerate(raw):
        at = f"{where}other_copies[{i}]."
        if not isinstance(c, dict):
            raise r.fail(f"{where}other_copies[{i}]", "expected an object with 'version' and 'path'")
        version, path = r.get(c, "version", (str,), at, None), r.get(c, "path", (str,), at, None)
        if version is None or path is None:
            raise r.fail(f"{at}{'version' if version is None else 'path'}", "missing")
        copies.append(Copy(version=version, path=path, path_kind=_kind(r, c, at)))
    return {
        "path": r.get(pkg, "path", (str,), where, None),
        "path_kind": _kind(r, pkg, where),
        "other_copies": copies,
    }


def load(path: str | Path) -> Facts:
    """Read a snapshot file; any problem is an ``InputError`` naming the file."""
    source = str(path)
    text = read_input_text(path, source, MAX_BYTES, "; not a snapshot")
    return from_dict(parse_json(text, source), source)
