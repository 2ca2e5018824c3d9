"""The versioned JSON snapshot of facts: ``envdoctor collect`` writes it, ``--facts`` reads it.

Format: docs/snapshot.md. Loading is tolerant of missing keys (hand-written snapshots) and
strict about types: anything malformed is an ``InputError`` naming the file and the key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envdoctor.errors import InputError, read_input_text
from envdoctor.facts.environment import mask
from envdoctor.facts.interface import (
    SCHEMA,
    Driver,
    Facts,
    Gpu,
    GpuProcess,
    Package,
    normalize_name,
)

MAX_BYTES = 64 * 1024 * 1024


def to_dict(facts: Facts) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "python": facts.python,
        "platform": facts.platform,
        "hostname": facts.hostname,
        "driver": {"version": facts.driver.version, "cuda": facts.driver.cuda},
        "nvml_error": facts.nvml_error,
        "packages": {
            name: ({"version": p.version, "requires": p.requires} if p.requires is not None
                   else {"version": p.version})
            for name, p in sorted(facts.packages.items())
        },
        "gpus": [
            {
                "index": g.index, "uuid": g.uuid, "name": g.name,
                "memory_total_mib": g.memory_total_mib, "memory_used_mib": g.memory_used_mib,
                "memory_free_mib": g.memory_free_mib,
                "compute_capability": g.compute_capability, "mig": g.mig,
                "mig_devices": g.mig_devices, "pci_bus_id": g.pci_bus_id,
                "processes": [{"pid": p.pid, "name": p.name, "used_mib": p.used_mib}
                              for p in g.processes],
            }
            for g in facts.gpus
        ],
        "env": mask(facts.env),
    }


def dumps(facts: Facts) -> str:
    return json.dumps(to_dict(facts), indent=2) + "\n"


class _Reader:
    """Typed access to a parsed snapshot that reports the offending key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str) -> InputError:
        return InputError(self.source, f"key '{key}': {problem}")

    def get(self, obj: dict, key: str, kinds: tuple[type, ...], where: str, default: Any = None):
        value = obj.get(key)
        if value is None:
            return default
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise self.fail(f"{where}{key}", f"expected {names}, got {type(value).__name__}")
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value < 2**53:
            raise self.fail(f"{where}{key}", f"out of range ({str(value)[:20]}…)"
                            if value >= 2**53 else f"negative ({value})")
        if isinstance(value, str):
            value = value.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
        return value


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
    facts.python = str(r.get(data, "python", (str,), "", ""))
    facts.platform = str(r.get(data, "platform", (str,), "", ""))
    facts.hostname = str(r.get(data, "hostname", (str,), "", ""))
    facts.nvml_error = r.get(data, "nvml_error", (str,), "", None)
    driver = r.get(data, "driver", (dict,), "", {})
    facts.driver = Driver(
        version=r.get(driver, "version", (str,), "driver.", None),
        cuda=r.get(driver, "cuda", (str,), "driver.", None),
    )
    for name, pkg in r.get(data, "packages", (dict,), "", {}).items():
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
        facts.packages[normalize_name(str(name))] = Package(version=version, requires=requires)
    gpus = r.get(data, "gpus", (list,), "", [])
    for i, g in enumerate(gpus):
        where = f"gpus[{i}]."
        if not isinstance(g, dict):
            raise r.fail(f"gpus[{i}]", "expected an object")
        index = r.get(g, "index", (int,), where, None)
        if index is None:
            raise r.fail(f"{where}index", "missing")
        if any(other.index == index for other in facts.gpus):
            raise r.fail(f"{where}index", f"GPU {index} is listed twice")
        procs = []
        for j, p in enumerate(r.get(g, "processes", (list,), where, [])):
            if not isinstance(p, dict) or not isinstance(p.get("pid"), int):
                raise r.fail(f"{where}processes[{j}]", "expected an object with an integer 'pid'")
            pw = f"{where}processes[{j}]."
            procs.append(GpuProcess(pid=p["pid"], name=str(r.get(p, "name", (str,), pw, "")),
                                    used_mib=r.get(p, "used_mib", (int,), pw, None)))
        cc = g.get("compute_capability")
        facts.gpus.append(Gpu(
            index=index,
            uuid=r.get(g, "uuid", (str,), where, ""),
            name=r.get(g, "name", (str,), where, ""),
            memory_total_mib=r.get(g, "memory_total_mib", (int,), where, None),
            memory_used_mib=r.get(g, "memory_used_mib", (int,), where, None),
            memory_free_mib=r.get(g, "memory_free_mib", (int,), where, None),
            compute_capability=None if cc is None else str(cc),
            mig=bool(r.get(g, "mig", (bool,), where, False)),
            mig_devices=[str(x) for x in r.get(g, "mig_devices", (list,), where, [])],
            pci_bus_id=r.get(g, "pci_bus_id", (str,), where, ""),
            processes=procs,
        ))
    env = r.get(data, "env", (dict,), "", {})
    facts.env = {str(k): str(v) for k, v in env.items() if v is not None}
    return facts


def load(path: str | Path) -> Facts:
    """Read a snapshot file; any problem is an ``InputError`` naming the file."""
    source = str(path)
    text = read_input_text(path, source, MAX_BYTES, "; not a snapshot")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise InputError(source, f"invalid JSON at {where}: {exc.msg}") from None
    except RecursionError:
        raise InputError(source, "JSON nested too deeply") from None
    except ValueError as exc:  # a number over Python's int-string limit (4,300 digits)
        raise InputError(source, f"unreadable number: {str(exc).split(';')[0]}") from None
    return from_dict(data, source)
