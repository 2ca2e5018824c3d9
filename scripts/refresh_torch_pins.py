#!/usr/bin/env python3
"""Re-derive the `torch_pins` table of rules/knowledge/vllm.yaml from PyPI metadata.

Maintainer script; not run in CI. NEEDS NETWORK ACCESS to https://pypi.org (the JSON API).

For every vLLM release in the requested range it reads
``https://pypi.org/pypi/vllm/<version>/json`` -> ``info.requires_dist`` and keeps the
unconditional ``torch==X`` pin and the ``transformers`` requirement (markers that only apply to
extras are dropped). The result is printed as YAML, ready to paste over ``torch_pins``.

Note: ``info.requires_dist`` is the metadata of the first file PyPI recorded for the release,
which for vLLM is the Linux x86_64 CUDA wheel; other platforms (ROCm, CPU, aarch64) may pin
differently and are out of scope.

Usage:
    python scripts/refresh_torch_pins.py                # 0.7.0 .. newest
    python scripts/refresh_torch_pins.py --min 0.10.0   # from 0.10.0
    python scripts/refresh_torch_pins.py --versions 0.7.2 0.7.3

Only the standard library, PyYAML and packaging are used.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.request

import yaml
from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

PYPI = "https://pypi.org/pypi/vllm"


def get_json(url: str) -> dict:
    if not url.startswith("https://"):
        raise ValueError(f"not an https URL: {url}")
    req = urllib.request.Request(url, headers={"User-Agent": "envdoctor-refresh-torch-pins"})  # noqa: S310
    with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 (https only, checked above)
        return json.load(resp)


def release_versions(min_version: Version) -> list[str]:
    data = get_json(f"{PYPI}/json")
    out = []
    for v, files in data.get("releases", {}).items():
        try:
            pv = Version(v)
        except InvalidVersion:
            continue
        if pv < min_version or pv.is_prerelease or pv.is_devrelease:
            continue
        if files and all(f.get("yanked") for f in files):
            continue
        out.append(v)
    return sorted(out, key=Version)


def pins_for(version: str) -> dict:
    info = get_json(f"{PYPI}/{version}/json")["info"]
    torch = None
    transformers = None
    for line in info.get("requires_dist") or []:
        req = Requirement(line)
        if req.marker is not None and "extra" in str(req.marker):
            continue
        if req.name == "torch":
            exact = [s.version for s in req.specifier if s.operator == "=="]
            torch = exact[0] if exact else str(req.specifier) or None
        elif req.name == "transformers":
            transformers = str(req.specifier) or None
    entry = {"vllm": version, "torch": torch}
    if transformers:
        entry["transformers"] = transformers
    entry["requires_python"] = info.get("requires_python")
    entry["references"] = [f"https://pypi.org/project/vllm/{version}/", f"{PYPI}/{version}/json"]
    return entry


class _Dumper(yaml.SafeDumper):
    pass


_VERSION = re.compile(r"^\d+(\.\d+)+$")
_Dumper.add_representer(
    str,
    lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style='"' if _VERSION.match(v) else None),
)


def main() -> int:
    ap = argparse.ArgumentParser(description="Print vLLM -> torch pins from PyPI as YAML (needs network).")
    ap.add_argument("--min", default="0.7.0", help="lowest vLLM version (default 0.7.0)")
    ap.add_argument("--versions", nargs="*", help="explicit versions instead of a range")
    args = ap.parse_args()
    versions = args.versions or release_versions(Version(args.min))
    rows = []
    for v in versions:
        try:
            rows.append(pins_for(v))
        except Exception as exc:  # network or metadata problem: report and go on
            print(f"# {v}: {exc}", file=sys.stderr)
    yaml.dump(
        {"torch_pins": rows}, sys.stdout, Dumper=_Dumper, sort_keys=False, width=120, default_flow_style=None
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
