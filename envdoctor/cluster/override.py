"""``ENVDOCTOR_FACTS_OVERRIDE``: merge a partial snapshot into this node's collected facts.

For rehearsing a cluster mismatch (and for the tests): point it, on one node only, at a JSON
file in the snapshot format (docs/snapshot.md) holding just what should differ, e.g.
``{"packages": {"vllm": "0.7.2"}}``. ``packages``, ``env``, ``driver`` and ``runtime`` are merged
key by key (``null`` removes a package or variable); other keys replace. The report names the file
on every node that used it, so a rehearsal is never mistaken for the real thing.
"""

from __future__ import annotations

from typing import Any

from envdoctor.errors import InputError, UnreadableInput, read_input_text
from envdoctor.facts.interface import Facts

ENV = "ENVDOCTOR_FACTS_OVERRIDE"
MERGED = ("packages", "env", "driver")


#: A partial snapshot: a few keys, far below a whole snapshot's limit.
MAX_BYTES = 4 * 1024 * 1024


def read_override(path: str) -> dict[str, Any]:
    """The override file, through the snapshot's bounded reader (size, special files, numbers)."""
    from envdoctor.parsing import parse_json

    source = f"{ENV}={path}"
    text = read_input_text(path, source, MAX_BYTES, "; a partial snapshot is small")
    try:
        data = parse_json(text, source)
    except InputError as exc:
        raise UnreadableInput(source, f"not a JSON file: {exc.problem}") from None
    if not isinstance(data, dict):
        raise InputError(f"{ENV}={path}", "expected a JSON object (a partial snapshot)")
    return data


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def apply_override(facts: Facts, runtime: dict[str, str], path: str) -> tuple[Facts, dict[str, str]]:
    """``facts`` and ``runtime`` with the override file merged in; ``InputError`` if malformed."""
    from envdoctor.facts.interface import SCHEMA
    from envdoctor.facts.snapshot import from_dict, to_dict

    data = read_override(path)
    merged = to_dict(facts)
    for key, value in data.items():
        if key in ("schema", "runtime"):
            continue
        if key in MERGED:
            if not isinstance(value, dict):
                raise InputError(f"{ENV}={path}", f"key '{key}': expected an object")
            merged[key] = _merge(merged.get(key) or {}, value)
        else:
            merged[key] = value
    merged["schema"] = SCHEMA
    new = from_dict(merged, f"{ENV}={path}")
    new.source, new.extra = facts.source, dict(facts.extra)
    extra_runtime = data.get("runtime") or {}
    if not isinstance(extra_runtime, dict):
        raise InputError(f"{ENV}={path}", "key 'runtime': expected an object")
    return new, {k: str(v) for k, v in _merge(runtime, extra_runtime).items()}
