"""``ENVDOCTOR_FACTS_OVERRIDE``: merge a partial snapshot into this node's collected facts.

For rehearsing a cluster mismatch (and for the tests): point it, on one node only, at a JSON
file in the snapshot format (docs/snapshot.md) holding just what should differ, e.g.
``{"packages": {"vllm": "0.7.2"}}``. ``packages``, ``env``, ``driver`` and ``runtime`` are merged
key by key (``null`` removes a package or variable); other keys replace. The report names the file
on every node that used it, so a rehearsal is never mistaken for the real thing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envdoctor.errors import InputError
from envdoctor.facts.interface import Facts

ENV = "ENVDOCTOR_FACTS_OVERRIDE"
MERGED = ("packages", "env", "driver")


def read_override(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{ENV}={path}", f"cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{ENV}={path}", f"not a JSON file: {exc}") from None
    except RecursionError:
        raise InputError(f"{ENV}={path}", "nested too deeply") from None
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


def apply_override(facts: Facts, runtime: dict[str, str],
                   path: str) -> tuple[Facts, dict[str, str]]:
    """``facts`` and ``runtime`` with the override file merged in; ``InputError`` if malformed."""
    from envdoctor.facts.snapshot import SCHEMA, from_dict, to_dict

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
