"""Validate a document against envdoctor's shipped JSON Schemas (envdoctor/schemas/).

Uses the ``jsonschema`` library where it is installed; else a small structural check of the
keywords those schemas use (type, const, enum, required, properties, additionalProperties,
items, maxItems, minimum, pattern, anyOf, allOf, $ref to ``#/$defs/…`` or a sibling schema)."""

from __future__ import annotations

import re
from typing import Any

from envdoctor import schemas

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}


def errors(doc: Any, name: str) -> list[str]:
    """Every way ``doc`` breaks schema ``name`` (empty: valid)."""
    schema = schemas.load(name)
    try:
        import jsonschema  # type: ignore[import-untyped]
        from referencing import Registry, Resource  # type: ignore[import-not-found]
    except ImportError:
        return list(_check(doc, schema, schema, "$"))
    registry = Registry().with_resources(
        (f"{n}.schema.json", Resource.from_contents(schemas.load(n))) for n in ("report", "hook", "snapshot")
    )
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


def _resolve(ref: str, root: dict) -> tuple[dict, dict]:
    if ref.startswith("#/$defs/"):
        return root["$defs"][ref[len("#/$defs/") :]], root
    other = schemas.load(ref.removesuffix(".schema.json"))
    return other, other


def _check(doc: Any, s: dict, root: dict, at: str):  # noqa: C901 - one branch per keyword
    if "$ref" in s:
        target, target_root = _resolve(s["$ref"], root)
        yield from _check(doc, target, target_root, at)
    for sub in s.get("allOf", []):
        yield from _check(doc, sub, root, at)
    if "anyOf" in s and not any(not list(_check(doc, sub, root, at)) for sub in s["anyOf"]):
        yield f"{at}: matches none of anyOf"
    if "const" in s and doc != s["const"]:
        yield f"{at}: {doc!r} is not {s['const']!r}"
    if "enum" in s and doc not in s["enum"]:
        yield f"{at}: {doc!r} not in {s['enum']}"
    kinds = s.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(doc, k) for k in kinds):
            yield f"{at}: {type(doc).__name__} is not {kinds}"
            return
    if isinstance(doc, dict):
        for key in s.get("required", []):
            if key not in doc:
                yield f"{at}: missing {key!r}"
        props = s.get("properties", {})
        extra = s.get("additionalProperties", True)
        for key, value in doc.items():
            if key in props:
                yield from _check(value, props[key], root, f"{at}.{key}")
            elif extra is False:
                yield f"{at}: unexpected key {key!r}"
            elif isinstance(extra, dict):
                yield from _check(value, extra, root, f"{at}.{key}")
    if isinstance(doc, list):
        if "maxItems" in s and len(doc) > s["maxItems"]:
            yield f"{at}: more than {s['maxItems']} items"
        if "items" in s:
            for i, item in enumerate(doc):
                yield from _check(item, s["items"], root, f"{at}[{i}]")
    if isinstance(doc, (int, float)) and not isinstance(doc, bool) and "minimum" in s and doc < s["minimum"]:
        yield f"{at}: {doc} below {s['minimum']}"
    if isinstance(doc, str) and "pattern" in s and not re.search(s["pattern"], doc):
        yield f"{at}: {doc!r} does not match {s['pattern']}"
