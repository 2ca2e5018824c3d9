#!/usr/bin/env python3
"""Derive rules/knowledge/parser_keys.yaml: the keys a TRL GRPO config file may hold besides
GRPOConfig's own (those are in grpo_config_keys.yaml).

Maintainer script; not run in CI. Two tables, each by release, parsed with ``ast`` (nothing is
imported or executed):

- ``training_arguments``: the fields of ``transformers.TrainingArguments``, which GRPOConfig
  inherits, from ``src/transformers/training_args.py`` of transformers wheels
  (``transformers-X.Y.Z-py3-none-any.whl`` in ``--transformers-wheels``; fetch them with
  ``pip download --no-deps transformers==X.Y.Z -d DIR``). One wheel per minor release is enough:
  fields change with minor releases.
- ``trl_script_arguments``: the other dataclasses TRL's own GRPO script hands to ``TrlParser``
  (``ModelConfig``, ``ScriptArguments``, ``GRPOScriptArguments``, ``DatasetMixtureConfig``) at
  every release tag of a TRL clone (``--trl-repo``) and in TRL wheels newer than its tags
  (``--trl-wheels``).

Usage:
    python scripts/derive_parser_keys.py --trl-repo /path/to/trl.git --trl-wheels DIR \\
        --transformers-wheels DIR > rules/knowledge/parser_keys.yaml
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import zipfile

import yaml
from packaging.version import Version

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from derive_grpo_config_keys import (  # noqa: E402  (sibling maintainer script)
    _Dumper,
    dataclass_fields,
    git_show,
    release_tags,
)

TA_PATH = "src/transformers/training_args.py"
TA_WHEEL_PATH = "transformers/training_args.py"
TRL_CLASSES = {
    "trl/trainer/model_config.py": ["ModelConfig"],
    "trl/scripts/utils.py": ["ScriptArguments", "DatasetMixtureConfig"],
    "trl/scripts/grpo.py": ["GRPOScriptArguments"],
}
TRL_URL = "https://github.com/huggingface/trl"
TF_URL = "https://github.com/huggingface/transformers"


def _wheels(folder: str, project: str) -> list[tuple[Version, str]]:
    out = []
    for name in os.listdir(folder):
        m = re.match(rf"^{project}-(\d+\.\d+\.\d+)-py3-none-any\.whl$", name)
        if m:
            out.append((Version(m.group(1)), os.path.join(folder, name)))
    return sorted(out)


def _read(zf: zipfile.ZipFile, path: str) -> str | None:
    return zf.read(path).decode("utf-8") if path in zf.namelist() else None


def _spans(snapshots: list[tuple[Version, dict[str, str]]]) -> dict[str, dict]:
    """name → since / until (first scanned release without it) / the class it belongs to."""
    versions = [v for v, _ in snapshots]
    names: list[str] = []
    for _, fields in snapshots:
        names += [n for n in fields if n not in names]
    out: dict[str, dict] = {}
    for name in names:
        present = [name in f for _, f in snapshots]
        first = present.index(True)
        last = len(present) - 1 - present[::-1].index(True)
        entry: dict = {
            "since": str(versions[first]),
            "until": None if present[-1] else str(versions[last + 1]),
        }
        owners = sorted({f[name] for _, f in snapshots if name in f})
        if any(o for o in owners):
            entry["in"] = owners
        out[name] = entry
    return out


def training_arguments(folder: str) -> tuple[list[str], dict[str, dict]]:
    snaps = []
    for version, path in _wheels(folder, "transformers"):
        with zipfile.ZipFile(path) as zf:
            src = _read(zf, TA_WHEEL_PATH)
        if src:
            _, fields = dataclass_fields(src, "TrainingArguments")
            snaps.append((version, {n: "" for n in fields}))
    return [str(v) for v, _ in snaps], _spans(snaps)


def _trl_fields(read) -> dict[str, str]:
    fields: dict[str, str] = {}
    for path, classes in TRL_CLASSES.items():
        src = read(path)
        if not src:
            continue
        for cls in classes:
            _, found = dataclass_fields(src, cls)
            for name in found:
                fields.setdefault(name, cls)
    return fields


def trl_script_arguments(repo: str | None, folder: str | None) -> tuple[list[str], dict]:
    snaps: list[tuple[Version, dict[str, str]]] = []
    if repo:
        for version, tag in release_tags(repo):
            snaps.append((version, _trl_fields(lambda p, t=tag: git_show(repo, t, p))))
    newest = snaps[-1][0] if snaps else Version("0")
    for version, path in _wheels(folder, "trl") if folder else []:
        if version > newest:
            with zipfile.ZipFile(path) as zf:
                snaps.append((version, _trl_fields(lambda p, z=zf: _read(z, p))))
    snaps = [s for s in snaps if s[1]]
    return [str(v) for v, _ in snaps], _spans(snaps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trl-repo", help="clone or bare mirror of huggingface/trl")
    ap.add_argument("--trl-wheels", help="folder of trl-*.whl newer than the clone's tags")
    ap.add_argument(
        "--transformers-wheels", required=True, help="folder of transformers-*.whl (one per minor release)"
    )
    args = ap.parse_args()
    ta_scanned, ta_keys = training_arguments(args.transformers_wheels)
    trl_scanned, trl_keys = trl_script_arguments(args.trl_repo, args.trl_wheels)
    if not ta_keys or not trl_keys:
        print("no TrainingArguments or no TRL script arguments found", file=sys.stderr)
        return 1
    doc = {
        "schema": "envdoctor.knowledge/1",
        "generated_by": "scripts/derive_parser_keys.py (ast parse; nothing imported)",
        "note": "since = the first scanned release that has the key (older releases were not scanned); "
        "until = the first scanned release without it.",
        "training_arguments": {
            "source": f"transformers wheels, {TA_WHEEL_PATH} (class TrainingArguments)",
            "releases_scanned": ta_scanned,
            "references": [
                f"{TF_URL}/blob/v{ta_scanned[0]}/{TA_PATH}",
                f"{TF_URL}/blob/v{ta_scanned[-1]}/{TA_PATH}",
            ],
            "keys": ta_keys,
        },
        "trl_script_arguments": {
            "source": "huggingface/trl release tags and wheels: "
            + ", ".join(f"{p} ({', '.join(c)})" for p, c in TRL_CLASSES.items()),
            "releases_scanned": trl_scanned,
            "references": [
                f"{TRL_URL}/blob/v{trl_scanned[0]}/trl/scripts/grpo.py",
                f"{TRL_URL}/blob/v{trl_scanned[-1]}/trl/scripts/grpo.py",
                f"{TRL_URL}/blob/v{trl_scanned[-1]}/trl/trainer/model_config.py",
            ],
            "keys": trl_keys,
        },
    }
    sys.stdout.write("# Generated by scripts/derive_parser_keys.py -- edit the script, not this file.\n")
    yaml.dump(
        doc,
        sys.stdout,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=110,
        default_flow_style=None,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
