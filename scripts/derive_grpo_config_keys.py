#!/usr/bin/env python3
"""Derive the GRPOConfig key table (rules/knowledge/grpo_config_keys.yaml) from TRL's git tags.

Maintainer script; not run in CI. It reads ``trl/trainer/grpo_config.py`` (and, from TRL 0.29 on,
the TRL base config class it inherits from, ``trl/trainer/base_config.py``) at every release tag
``vX.Y.Z`` >= v0.14.0 of a local clone/mirror of https://github.com/huggingface/trl, and parses the
dataclass fields with ``ast`` (nothing from TRL is imported or executed).

Usage:
    python scripts/derive_grpo_config_keys.py /path/to/trl.git > rules/knowledge/grpo_config_keys.yaml
    python scripts/derive_grpo_config_keys.py /path/to/trl.git --wheel-dir /tmp/trl-wheels > ...

``--wheel-dir`` adds releases whose tags the clone lacks (e.g. a stale mirror): every
``trl-<version>-py3-none-any.whl`` in that directory is read with ``zipfile`` and used for versions
newer than the newest git tag.  Fetch them with ``pip download --no-deps trl==<version> -d DIR``.

If the ``transformers`` package can be located (``importlib.util.find_spec``, without importing it),
its ``training_args.py`` is parsed too, so that fields which only re-declare a ``TrainingArguments``
field are flagged and are never reported as removed (they stay accepted through inheritance).

Output: YAML on stdout (schema envdoctor.knowledge/1). Needs PyYAML and packaging.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import subprocess
import sys
import zipfile

import yaml
from packaging.version import Version

GRPO_PATH = "trl/trainer/grpo_config.py"
BASE_PATHS = ("trl/trainer/base_config.py",)
TAG_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
MIN_VERSION = Version("0.14.0")
REPO_URL = "https://github.com/huggingface/trl"

# Curated: a removed key and the key(s) that took over its role. The mechanical part of this script
# cannot know this; each entry was checked by reading the two neighbouring tags (see the reference).
REPLACED_BY = {
    "vllm_device": {
        "replaced_by": "vllm_server_host",
        "note": "0.16 stopped starting vLLM inside the trainer (the key stayed, deprecated and ignored, in "
        "0.16-0.17); generation moved to a `trl vllm-serve` process reached at "
        "vllm_server_host:vllm_server_port.",
    },
    "vllm_dtype": {
        "replaced_by": None,
        "note": "ignored from 0.16; in server mode the dtype is a `trl vllm-serve` option (--dtype).",
    },
    "vllm_enable_prefix_caching": {
        "replaced_by": None,
        "note": "ignored from 0.16 (after one release); a `trl vllm-serve` option (--enable_prefix_caching).",
    },
    "vllm_max_model_len": {
        "replaced_by": "vllm_max_model_length",
        "note": "ignored from 0.16 (a `trl vllm-serve` option, --max_model_len); GRPOConfig regained the "
        "setting for colocate mode as vllm_max_model_length in 0.26.0.",
    },
    "vllm_guided_decoding_regex": {
        "replaced_by": "vllm_structured_outputs_regex",
        "note": "deprecated in 0.27 (FutureWarning), removed in 0.28.",
    },
    "wandb_log_unique_prompts": {
        "replaced_by": "log_unique_prompts",
        "note": "deprecated in 0.26 (FutureWarning), removed in 0.27.",
    },
    "use_liger_loss": {
        "replaced_by": "use_liger_kernel",
        "note": "deprecated in 0.25-0.27 (FutureWarning), removed in 0.28.",
        # the field's help never said "deprecated" (its docstring and __post_init__'s FutureWarning
        # did, v0.25.0 grpo_config.py): the window the help scan cannot see
        "deprecated_help": {"first": "0.25.0", "last": "0.27.2", "until": "0.28.0"},
    },
    "max_prompt_length": {
        "replaced_by": None,
        "note": "deprecated in 0.26-0.27 (filter the dataset instead), removed in 0.28.",
    },
}

# Curated facts about defaults that the ast pass alone cannot see (values resolved in __post_init__).
NOTES = {
    "bf16": {
        "effective_default": {"before_0.19.0": False, "from_0.19.0": "not fp16 (True unless fp16=True)"},
        "note": "From 0.19.0 TRL re-declares bf16 with default None and __post_init__ turns None into "
        "`not fp16`, "
        "so GRPO trains in bf16 by default (on CPU pass use_cpu=True, bf16=False). Before 0.19 the "
        "TrainingArguments default (False) applied.",
        "references": [
            REPO_URL + "/blob/v0.19.0/trl/trainer/grpo_config.py",
            REPO_URL + "/blob/v1.16.0/trl/trainer/base_config.py",
        ],
    },
    "vllm_mode": {
        "note": "Default changed from 'server' to 'colocate' in 1.0.0 (huggingface/trl#5255).",
        "references": [REPO_URL + "/issues/5255", REPO_URL + "/blob/v1.0.0/trl/trainer/grpo_config.py"],
    },
}

VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")


class _Dumper(yaml.SafeDumper):
    """SafeDumper that always quotes version-like strings, so they stay strings for every YAML reader."""


def _repr_str(dumper: yaml.SafeDumper, value: str):
    style = '"' if VERSION_RE.match(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _repr_str)


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def git_show(repo: str, tag: str, path: str) -> str | None:
    try:
        return git(repo, "show", f"{tag}:{path}")
    except subprocess.CalledProcessError:
        return None


def release_tags(repo: str) -> list[tuple[Version, str]]:
    tags = []
    for tag in git(repo, "tag").split():
        if TAG_RE.match(tag) and Version(tag[1:]) >= MIN_VERSION:
            tags.append((Version(tag[1:]), tag))
    return sorted(tags)


def _literal(node: ast.AST, src: str):
    """Return (is_literal, value_or_source_text)."""
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, ast.get_source_segment(src, node)


def _is_classvar(annotation: ast.AST) -> bool:
    text = ast.unparse(annotation)
    return text.startswith("ClassVar") or text.startswith("typing.ClassVar")


def dataclass_fields(src: str, class_name: str | None = None) -> tuple[str | None, dict[str, dict]]:
    """Fields of the first class (or ``class_name``) in ``src``: {name: {literal, default}}."""
    tree = ast.parse(src)
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        if class_name is not None and node.name != class_name:
            continue
        bases = [ast.unparse(b) for b in node.bases]
        fields: dict[str, dict] = {}
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            if _is_classvar(stmt.annotation):
                continue
            info = {"annotation": ast.unparse(stmt.annotation), "literal": False, "default": None, "help": ""}
            value = stmt.value
            if value is None:
                info["default"] = "<required>"
            elif isinstance(value, ast.Call) and ast.unparse(value.func) in ("field", "dataclasses.field"):
                kw = {k.arg: k.value for k in value.keywords}
                if isinstance(kw.get("metadata"), ast.Dict):
                    for mk, mv in zip(kw["metadata"].keys, kw["metadata"].values, strict=True):
                        if isinstance(mk, ast.Constant) and mk.value == "help":
                            ok, text = _literal(mv, src)
                            info["help"] = text if ok and isinstance(text, str) else ""
                if "default" in kw:
                    info["literal"], info["default"] = _literal(kw["default"], src)
                elif "default_factory" in kw:
                    info["default"] = f"<factory: {ast.get_source_segment(src, kw['default_factory'])}>"
                else:
                    info["default"] = "<required>"
            else:
                info["literal"], info["default"] = _literal(value, src)
            fields[stmt.target.id] = info
        return (bases[0] if bases else None), fields
    return None, {}


def training_arguments_fields() -> set[str] | None:
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "training_args.py")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        _, fields = dataclass_fields(fh.read(), "TrainingArguments")
    return set(fields) or None


def fields_at(sources: dict[str, str | None]) -> dict[str, dict]:
    """Merge the TRL base config fields (if GRPOConfig inherits from one) with GRPOConfig's own."""
    base, own = dataclass_fields(sources[GRPO_PATH], "GRPOConfig")
    merged: dict[str, dict] = {}
    if base and base.lstrip("_") == "BaseConfig":
        for path in BASE_PATHS:
            if sources.get(path):
                _, base_fields = dataclass_fields(sources[path])
                for name, info in base_fields.items():
                    merged[name] = dict(info, declared_in="base_config")
    for name, info in own.items():
        merged[name] = dict(info, declared_in="grpo_config")
    return merged


def wheel_sources(wheel_dir: str) -> list[tuple[Version, str, dict[str, str | None]]]:
    out = []
    for fname in sorted(os.listdir(wheel_dir)):
        m = re.match(r"^trl-(\d+\.\d+\.\d+)-py3-none-any\.whl$", fname)
        if not m:
            continue
        with zipfile.ZipFile(os.path.join(wheel_dir, fname)) as zf:
            names = set(zf.namelist())
            srcs = {p: (zf.read(p).decode("utf-8") if p in names else None) for p in (GRPO_PATH, *BASE_PATHS)}
        out.append((Version(m.group(1)), fname, srcs))
    return out


def fmt(v: Version) -> str:
    return str(v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", help="path to a clone or bare mirror of huggingface/trl")
    ap.add_argument("--wheel-dir", help="directory of trl-*.whl for releases newer than the newest git tag")
    args = ap.parse_args()

    snapshots: list[tuple[Version, str, dict[str, dict]]] = []  # (version, origin, fields)
    for version, tag in release_tags(args.repo):
        srcs = {p: git_show(args.repo, tag, p) for p in (GRPO_PATH, *BASE_PATHS)}
        if srcs[GRPO_PATH] is None:
            continue
        snapshots.append((version, f"tag {tag}", fields_at(srcs)))
    newest_tag = snapshots[-1][0] if snapshots else Version("0")
    if args.wheel_dir:
        for version, fname, srcs in wheel_sources(args.wheel_dir):
            if version > newest_tag and srcs[GRPO_PATH] is not None:
                snapshots.append((version, f"wheel {fname}", fields_at(srcs)))
    snapshots.sort(key=lambda s: s[0])
    if not snapshots:
        print("no GRPOConfig found", file=sys.stderr)
        return 1
    sys.stdout.write(render(build_doc(snapshots)))
    return 0


def build_doc(snapshots: list[tuple[Version, str, dict[str, dict]]]) -> dict:
    """The key table from (version, origin, fields) snapshots sorted by version (also used by
    scripts/refresh_knowledge.py, which reads the fields from release wheels)."""
    ta_fields = training_arguments_fields()
    versions = [s[0] for s in snapshots]
    names: list[str] = []
    for _, _, fields in snapshots:
        for n in fields:
            if n not in names:
                names.append(n)

    keys: dict[str, dict] = {}
    for name in names:
        present = [name in f for _, _, f in snapshots]
        first = present.index(True)
        entry: dict = {"since": fmt(versions[first])}
        # first version after the last presence, if the key is absent at the newest snapshot
        if present[-1]:
            entry["until"] = None
        else:
            last = len(present) - 1 - present[::-1].index(True)
            entry["until"] = fmt(versions[last + 1])
        gaps = [fmt(versions[i]) for i in range(first, len(present)) if not present[i] and any(present[i:])]
        if gaps:
            entry["absent_in"] = gaps
        is_ta = ta_fields is not None and name in ta_fields
        if is_ta:
            entry["overrides_training_arguments"] = True
            if entry["until"] is not None:
                entry["trl_override_dropped_in"] = entry["until"]
                entry["until"] = None  # still accepted, inherited from TrainingArguments
        flagged = [fmt(v) for v, _, f in snapshots if name in f and "deprecated" in f[name]["help"].lower()]
        if flagged:
            entry["deprecated_help"] = {"first": flagged[0], "last": flagged[-1]}
            after = [v for v in versions if v > Version(flagged[-1])]
            # the first scanned release whose help no longer says "deprecated": the window's end
            entry["deprecated_help"]["until"] = fmt(after[0]) if after else None
            last_help = [f[name]["help"] for v, _, f in snapshots if fmt(v) == flagged[-1]][0]
            use = re.search(r"[Uu]se `(\w+)` instead", last_help)
            if use:
                entry["deprecated_help"]["use_instead"] = use.group(1)
        if entry.get("until") and name in REPLACED_BY:
            entry.update({k: v for k, v in REPLACED_BY[name].items() if v is not None or k == "replaced_by"})
        # default at the newest snapshot that has the key, and its history
        history = []
        for v, _, f in snapshots:
            if name in f:
                d = f[name]["default"] if f[name]["literal"] else f"<expr: {f[name]['default']}>"
                if not history or history[-1]["default"] != d:
                    history.append({"since": fmt(v), "default": d})
        last_info = [f[name] for _, _, f in snapshots if name in f][-1]
        if last_info["literal"]:
            entry["default"] = last_info["default"]
        else:
            entry["default_expr"] = last_info["default"]
        if len(history) > 1:
            entry["default_history"] = history
        entry["declared_in"] = last_info.get("declared_in", "grpo_config")
        path = GRPO_PATH if entry["declared_in"] == "grpo_config" else BASE_PATHS[0]
        refs = [f"{REPO_URL}/blob/v{entry['since']}/{GRPO_PATH}"]
        if entry.get("until"):
            refs.append(f"{REPO_URL}/blob/v{entry['until']}/{GRPO_PATH}")
        elif path != GRPO_PATH:
            refs.append(f"{REPO_URL}/blob/v{fmt(versions[-1])}/{path}")
        notes = dict(NOTES.get(name, {}))
        refs += [r for r in notes.pop("references", []) if r not in refs]
        entry.update(notes)
        entry["references"] = refs
        keys[name] = entry

    doc = {
        "schema": "envdoctor.knowledge/1",
        "source": f"huggingface/trl release tags v{versions[0]}..v{versions[-1]}, {GRPO_PATH} (and "
        f"{BASE_PATHS[0]} from 0.29.0, where GRPOConfig inherits TRL's base config)",
        "generated_by": "scripts/derive_grpo_config_keys.py (ast parse; nothing imported)",
        "inherits": "Every transformers.TrainingArguments field is also accepted by GRPOConfig (it "
        "subclasses TrainingArguments directly up to 0.28.x, through trl's BaseConfig/_BaseConfig from "
        "0.29.0); only fields TRL declares itself are listed. overrides_training_arguments marks TRL "
        "re-declarations of such fields.",
        "tags_scanned": [fmt(v) for v in versions],
        "origins": {fmt(v): o for v, o, _ in snapshots if not o.startswith("tag ")},
        "references": [
            f"{REPO_URL}/blob/v{versions[0]}/{GRPO_PATH}",
            f"{REPO_URL}/blob/v{versions[-1]}/{GRPO_PATH}",
            f"{REPO_URL}/blob/v{versions[-1]}/{BASE_PATHS[0]}",
        ],
        "keys": keys,
    }
    if not doc["origins"]:
        del doc["origins"]
    return doc


def render(doc: dict) -> str:
    head = "# Generated by scripts/derive_grpo_config_keys.py -- edit the script, not this file.\n"
    return head + yaml.dump(
        doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110, default_flow_style=None
    )


if __name__ == "__main__":
    sys.exit(main())
