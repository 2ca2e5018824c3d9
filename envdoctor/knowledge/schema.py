"""Schema of ``rules/knowledge/*.yaml``: checked by the tests and the maintainer scripts.

Only data, no code: every table entry carries ``references``, versions are strings and every
``known_bad.when`` uses the small vocabulary below.
"""

from __future__ import annotations

from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envdoctor.knowledge import SCHEMA

#: ``known_bad[].when`` keys that are not package names.
WHEN_KEYS = {"use_vllm": bool, "vllm_mode": str, "world_size_above": int}


class KnowledgeError(ValueError):
    """A knowledge file breaks the schema."""


def _spec(value: Any, where: str) -> None:
    try:
        SpecifierSet(str(value))
    except InvalidSpecifier:
        raise KnowledgeError(f"{where}: {value!r} is not a PEP 440 specifier") from None


def _refs(entry: dict[str, Any], where: str) -> None:
    refs = entry.get("references")
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) and r for r in refs):
        raise KnowledgeError(f"{where}: needs a non-empty list of string references")


def check_when(when: Any, where: str) -> None:
    if not isinstance(when, dict) or not when:
        raise KnowledgeError(f"{where}.when: expected a non-empty mapping")
    for key, value in when.items():
        w = f"{where}.when.{key}"
        if key in WHEN_KEYS:
            if not isinstance(value, WHEN_KEYS[key]):
                raise KnowledgeError(f"{w}: expected {WHEN_KEYS[key].__name__}")
        elif key.startswith("env."):
            if not (isinstance(value, dict) and set(value) == {"contains"}):
                raise KnowledgeError(f"{w}: expected {{contains: TEXT}}")
        elif key.startswith("config."):
            if isinstance(value, (dict, list)):
                raise KnowledgeError(f"{w}: expected a scalar")
        else:
            _spec(value, w)


def _date(value: Any, where: str) -> None:
    import re

    if not (isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)):
        raise KnowledgeError(f"{where}: expected a date as a quoted 'YYYY-MM-DD' string")


def _horizon(name: str, data: dict[str, Any]) -> None:
    """horizon.yaml: ``checked`` (a date) and, per package, its newest known release and date."""
    from packaging.version import InvalidVersion, Version

    _date(data.get("checked"), f"{name}: checked")
    packages = data.get("packages")
    if not isinstance(packages, dict) or not packages:
        raise KnowledgeError(f"{name}: packages: expected a mapping of package name to its newest release")
    for pkg, entry in packages.items():
        where = f"{name}: packages.{pkg}"
        if not isinstance(entry, dict):
            raise KnowledgeError(f"{where}: expected {{newest, released, references}}")
        try:
            Version(str(entry.get("newest")))
        except InvalidVersion:
            raise KnowledgeError(f"{where}.newest: {entry.get('newest')!r} is not a version") from None
        if not isinstance(entry.get("newest"), str):
            raise KnowledgeError(f"{where}.newest: expected a quoted version string")
        _date(entry.get("released"), f"{where}.released")
        _refs(entry, where)


def _optional_features(name: str, data: dict[str, Any]) -> None:
    """optional_features.yaml: each row's keys, values, package, consumer, pin and references."""
    from packaging.version import InvalidVersion, Version

    rows = data.get("requests")
    if not isinstance(rows, list) or not rows:
        raise KnowledgeError(f"{name}: requests: expected a list of rows")
    for i, row in enumerate(rows):
        where = f"{name}: requests[{i}]"
        if not isinstance(row, dict) or not all(row.get(k) for k in ("id", "keys", "values", "package")):
            raise KnowledgeError(f"{where}: needs id, keys, values and package")
        if row.get("consumer") not in ("model", "trainer", "script"):
            raise KnowledgeError(f"{where}.consumer: one of model, trainer, script")
        release = row.get("release")
        try:
            if release is not None and (not isinstance(release, str) or not Version(release)):
                raise InvalidVersion
        except InvalidVersion:
            raise KnowledgeError(f"{where}.release: {release!r} is not a quoted version") from None
        _refs(row, where)


def _yaml_string_keys(name: str, data: dict[str, Any]) -> None:
    """CFG013's table: the words YAML 1.1 reads as a boolean / None, and per config key its type,
    the values it accepts, what a bool / None does there, and the source that says so."""
    words = data.get("words")
    if not isinstance(words, dict) or not all(isinstance(words.get(k), list) for k in ("bool", "null")):
        raise KnowledgeError(f"{name}: words needs bool and null lists")
    keys = data.get("keys")
    if not isinstance(keys, dict) or not keys:
        raise KnowledgeError(f"{name}: keys missing")
    for key, entry in keys.items():
        where = f"{name}: keys.{key}"
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise KnowledgeError(f"{where}: needs type (the field's type)")
        if not isinstance(entry.get("accepted"), list) or not entry["accepted"]:
            raise KnowledgeError(f"{where}: needs accepted (the values the field takes)")
        _refs(entry, where)


def _accelerate_deepspeed(name: str, data: dict[str, Any]) -> None:
    """LAY025's table: the release that added accelerate's check, and the deepspeed_config keys
    it refuses beside a DeepSpeed JSON."""
    from packaging.version import InvalidVersion, Version

    keys = data.get("deepspeed_config_keys")
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
        raise KnowledgeError(f"{name}: deepspeed_config_keys needs a list of key names")
    since = data.get("since")
    try:
        if not isinstance(since, str) or not Version(since):
            raise InvalidVersion
    except InvalidVersion:
        raise KnowledgeError(f"{name}: since: {since!r} is not a quoted version") from None
    _refs(data, name)


def _trainer_columns(name: str, data: dict[str, Any]) -> None:
    """trainer_columns.yaml: each trainer's file, data-preparation functions and references; each
    release a TRL specifier with its columns (and the config keys that name one)."""
    trainers = data.get("trainers")
    if not isinstance(trainers, list) or not trainers:
        raise KnowledgeError(f"{name}: needs a non-empty list of trainers")
    for i, t in enumerate(trainers):
        where = f"{name}: trainers[{i}]"
        if not isinstance(t, dict) or not isinstance(t.get("file"), str) or not t["file"]:
            raise KnowledgeError(f"{where}: needs file (the module's path ending)")
        if not isinstance(t.get("functions"), list) or not all(isinstance(f, str) for f in t["functions"]):
            raise KnowledgeError(f"{where}: needs functions (a list of names)")
        _refs(t, where)
        releases = t.get("releases")
        if not isinstance(releases, list) or not releases:
            raise KnowledgeError(f"{where}: needs releases")
        for j, r in enumerate(releases):
            w = f"{where}.releases[{j}]"
            _spec(r.get("trl"), f"{w}.trl")
            if not isinstance(r.get("columns"), list) or not isinstance(r.get("config") or {}, dict):
                raise KnowledgeError(f"{w}: needs columns (a list) and config (a mapping) if any")
        for j, c in enumerate(t.get("reward_call") or []):
            _spec(c.get("trl"), f"{where}.reward_call[{j}].trl")
            if not isinstance(c.get("functions"), list) or not c["functions"]:
                raise KnowledgeError(f"{where}.reward_call[{j}]: needs functions")


def validate(name: str, data: Any) -> None:
    """Raise ``KnowledgeError`` unless ``data`` (the parsed file ``name``) fits the schema."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise KnowledgeError(f"{name}: 'schema: {SCHEMA}' missing")
    if name == "horizon.yaml":
        _horizon(name, data)
    if name == "optional_features.yaml":
        _optional_features(name, data)
    if name == "yaml_string_keys.yaml":
        _yaml_string_keys(name, data)
        return
    if name == "accelerate_deepspeed.yaml":
        _accelerate_deepspeed(name, data)
        return
    if name == "trainer_columns.yaml":
        _trainer_columns(name, data)
        return
    for i, line in enumerate(data.get("trl_lines", [])):
        where = f"{name}: trl_lines[{i}]"
        _spec(line.get("trl"), f"{where}.trl")
        if line.get("vllm"):
            _spec(line["vllm"], f"{where}.vllm")
        _refs(line, where)
    for i, feat in enumerate(data.get("features", [])):
        where = f"{name}: features[{i}]"
        if not feat.get("name") or not isinstance(feat.get("since"), str):
            raise KnowledgeError(f"{where}: needs name and since (a version string)")
        _refs(feat, where)
    for i, pin in enumerate(data.get("torch_pins", [])):
        where = f"{name}: torch_pins[{i}]"
        if not (isinstance(pin.get("vllm"), str) and isinstance(pin.get("torch"), str)):
            raise KnowledgeError(f"{where}: needs vllm and torch version strings")
        _refs(pin, where)
    for i, bad in enumerate(data.get("known_bad", [])):
        where = f"{name}: known_bad[{i}] ({bad.get('id')})"
        for key in ("id", "symptom", "fix"):
            if not isinstance(bad.get(key), str) or not bad[key].strip():
                raise KnowledgeError(f"{where}: '{key}' must be a non-empty string")
        if bad.get("severity", "error") not in ("error", "warning"):
            raise KnowledgeError(f"{where}: severity must be error or warning")
        if bad.get("rule") is not None and not str(bad["rule"]).isalnum():
            raise KnowledgeError(f"{where}: rule must be a rule id")
        check_when(bad.get("when"), where)
        _refs(bad, where)
    for kind in ("binds", "imports", "measured_harmless"):
        for i, entry in enumerate(data.get(kind, [])):
            where = f"{name}: {kind}[{i}]"
            if not (entry.get("targets") or entry.get("target")) or not (
                entry.get("sources") or entry.get("source")
            ):
                raise KnowledgeError(f"{where}: needs source(s) and target(s)")
            for src in entry.get("sources") or [entry.get("source")]:
                if entry.get(src) is not None:
                    _spec(entry[src], f"{where}.{src}")
            if kind != "measured_harmless" and not entry.get("why"):
                raise KnowledgeError(f"{where}: needs why (the evidence)")
            _refs(entry, where)
    for i, hook in enumerate(data.get("trainer_hooks", [])):
        where = f"{name}: trainer_hooks[{i}]"
        if not all(isinstance(hook.get(k), str) and hook[k] for k in ("method", "argument", "since", "fix")):
            raise KnowledgeError(f"{where}: needs method, argument, since (a version string) and fix")
        if hook.get("how") not in ("keyword", "positional"):
            raise KnowledgeError(f"{where}: how must be keyword or positional")
        _refs(hook, where)
    for key, entry in (data.get("keys") or {}).items():
        where = f"{name}: keys.{key}"
        if not isinstance(entry, dict) or not isinstance(entry.get("since"), str):
            raise KnowledgeError(f"{where}: needs since (a version string)")
