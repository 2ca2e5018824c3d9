"""A script's own declared stack: PEP 723 inline script metadata (a ``# /// script`` comment
block whose TOML lists ``dependencies``), which ``uv run`` / ``pipx run`` install for that script
alone (notebooks exported as scripts carry theirs: ``"trl==0.22.2"``). Read as text, never run.
https://packaging.python.org/en/latest/specifications/inline-script-metadata/"""

from __future__ import annotations

import re
from pathlib import Path

from envdoctor.facts.declared.interface import Found, requirement

#: the specification's own pattern of a metadata block
_BLOCK = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
MAX_BYTES = 2 * 1024 * 1024


def read(path: Path, shown: str) -> Found | None:
    """The ``dependencies`` of the script's ``# /// script`` block; None when it has none (or
    the block is not valid TOML: then the script declares nothing envdoctor can read)."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if "# /// script" not in text:
        return None
    block = next((m for m in _BLOCK.finditer(text) if m["type"] == "script"), None)
    if block is None:
        return None
    lines = [ln[2:] if ln.startswith("# ") else ln[1:] for ln in block["content"].splitlines()]
    from envdoctor.errors import InputError
    from envdoctor.settings import parse_toml

    try:
        data = parse_toml("\n".join(lines), shown)
    except InputError:
        return None
    deps = data.get("dependencies")
    if not isinstance(deps, list):
        return None
    first = text[: block.start()].count("\n") + 1
    body = text[block.start() : block.end()].splitlines()
    found = Found(files=[shown])
    for dep in deps:
        if not isinstance(dep, str):
            continue
        line = first + next((i for i, ln in enumerate(body) if dep in ln), 0)
        decl = requirement(dep, shown, line)
        if decl is not None:
            found.declarations.append(decl)
    return found
