"""conda ``environment.yml``: its ``pip:`` section, and conda pins of the stack where the conda
package is the same software (``pytorch`` is torch; ``python`` is the interpreter, judged against
the Python range of the vLLM release)."""

from __future__ import annotations

import re
from pathlib import Path

from envdoctor.facts.declared import requirements
from envdoctor.facts.declared.interface import Declaration, Found, LineIndex, resolved, spend, text_of
from envdoctor.facts.interface import normalize_name

PATTERNS = ("environment.yml", "environment.yaml", "conda.yml", "conda.yaml")
#: conda package → the PyPI distribution it is (others keep their name)
RENAMED = {"pytorch": "torch", "pytorch-gpu": "torch", "pytorch-cpu": "torch"}
NOT_PYPI = {"pip", "cudatoolkit", "pytorch-cuda", "cuda", "cuda-version", "mkl"}
_SPEC = re.compile(r"^(?:[\w.-]+::)?([A-Za-z0-9][\w.-]*)\s*(==|=|>=|<=|>|<|!=)?\s*([^=\s]*)")


def read(path: Path, shown: str) -> Found:
    from envdoctor.errors import InputError
    from envdoctor.parsing import parse_mapping

    text = text_of(path, shown)  # read once: parsed, then its lines give the declarations' lines
    data = parse_mapping(text, f"conda environment {path}")  # size and nesting limits
    deps = data.get("dependencies") or []
    if not isinstance(deps, list):
        raise InputError(shown, "'dependencies' must be a list")
    pips = [
        x
        for item in deps
        if isinstance(item, dict) and isinstance(item.get("pip"), list)
        for x in item["pip"]
    ]
    spend(shown, len(deps))  # the pip lines count in read_lines
    index = LineIndex(text.splitlines(), [str(x) for x in (*deps, *pips) if isinstance(x, (str, int, float))])
    found = Found(files=[shown])
    for item in deps:
        if isinstance(item, str):
            decl = conda_spec(item, shown, index.find(item))
            if decl is not None:
                found.declarations.append(decl)
        elif isinstance(item, dict) and isinstance(item.get("pip"), list):
            numbered = [(index.find(str(x)), str(x)) for x in item["pip"] if isinstance(x, (str, int, float))]
            found.add(requirements.read_lines(numbered, path, shown, seen={resolved(path, shown)}))
    return found


def conda_spec(text: str, shown: str, line: int) -> Declaration | None:
    """``pytorch=2.6.0`` / ``pytorch::pytorch==2.6.0=py3.11*`` / ``numpy>=2``; None when the
    package has no PyPI twin (python, the CUDA toolkit)."""
    m = _SPEC.match(text.strip())
    if not m:
        return None
    name = normalize_name(m.group(1))
    if name in NOT_PYPI:
        return None
    op, version = m.group(2), m.group(3).rstrip("*").rstrip(".")
    if not op or not version:
        spec = ""
    elif op == "=":  # conda's fuzzy match: 2.6 means 2.6.*, 2.6.0 means that release
        spec = f"=={version}" if version.count(".") >= 2 else f"=={version}.*"
    else:
        spec = f"{op}{version}"
    from envdoctor import versions

    if spec and versions.spec(spec) is None:
        return None
    return Declaration(name=RENAMED.get(name, name), specifier=spec, file=shown, line=line)
