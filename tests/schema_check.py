"""Validate a document against envdoctor's shipped JSON Schemas (envdoctor/schemas/) with the
``jsonschema`` library (Draft 2020-12; a schema's ``$ref`` to a sibling schema is resolved from
the package)."""

from __future__ import annotations

from typing import Any

import jsonschema
from referencing import Registry, Resource

from envdoctor import schemas


def errors(doc: Any, name: str) -> list[str]:
    """Every way ``doc`` breaks schema ``name`` (empty: valid)."""
    registry = Registry().with_resources(
        (f"{n}.schema.json", Resource.from_contents(schemas.load(n))) for n in schemas.NAMES
    )
    validator = jsonschema.Draft202012Validator(schemas.load(name), registry=registry)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
