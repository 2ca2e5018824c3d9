"""Maintainer tool (needs the network; not run by the tests): one era's package facts.

An era is the stack a published setup was written for. Its packages come from a real resolution
by pip, metadata only, for the target Python and Linux x86_64:

    pip install --dry-run --ignore-installed --only-binary=:all: --python-version 3.11 \\
        --platform manylinux_2_28_x86_64 ... --target /tmp/t --report r.json 'trl[vllm]==0.18.0' ...

``--report`` holds every resolved distribution with its ``Requires-Dist`` exactly as in the
wheel's METADATA. This tool keeps what ``envdoctor collect`` keeps on a real machine
(envdoctor/facts/packages.py): the training stack with its requirements, and the version of each
distribution the stack directly requires. Distributions published only as sdists (deepspeed,
flash-attn) or installed from git (TRL at a commit) are given in an overrides file with the
requirements read from their source at that version, and where they came from.

    python tests/conformance/make_era.py r.json --name openr1-2025-05 --python 3.11 \\
        --overrides overrides.json --note "..." > tests/conformance/eras/openr1-2025-05.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from envdoctor.facts.packages import STACK  # noqa: E402 - the stack `envdoctor collect` keeps

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def build(report: dict, overrides: dict, local: dict[str, str]) -> dict[str, dict]:
    resolved: dict[str, dict] = {}
    for item in report["install"]:
        meta = item["metadata"]
        resolved[norm(meta["name"])] = {
            "version": meta["version"],
            "requires": list(meta.get("requires_dist") or []),
        }
    for name, pkg in overrides.items():
        resolved[norm(name)] = {k: v for k, v in pkg.items() if k in ("version", "requires")}
    for name, version in local.items():  # e.g. torch's +cu130 local build tag
        resolved[norm(name)]["version"] = version
    out: dict[str, dict] = {}
    for name in STACK:
        if name in resolved:
            out[name] = resolved[name]
    wanted = {
        norm(m.group(1)) for pkg in list(out.values()) for line in pkg["requires"] if (m := _NAME.match(line))
    }
    for name in sorted(wanted - set(out)):
        if name in resolved:
            out[name] = {"version": resolved[name]["version"]}
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--name", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--overrides", help="JSON: name -> {version, requires, source}")
    ap.add_argument("--local", action="append", default=[], help="NAME=VERSION (local tag)")
    ap.add_argument("--request", required=True, help="the requirements given to pip")
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    report = json.loads(Path(a.report).read_text(encoding="utf-8"))
    overrides = json.loads(Path(a.overrides).read_text(encoding="utf-8")) if a.overrides else {}
    local = dict(item.split("=", 1) for item in a.local)
    era = {
        "era": a.name,
        "python": a.python,
        "resolved_with": f"pip {report.get('pip_version', '?')} --dry-run --report, "
        f"Linux x86_64, Python {a.python}: {a.request}",
        "note": a.note,
        "overrides": {norm(k): v.get("source", "") for k, v in overrides.items()},
        "local_versions": local,
        "packages": build(report, overrides, local),
    }
    json.dump(era, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
