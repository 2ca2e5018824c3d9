"""``pyproject.toml``: [project] dependencies and extras, [dependency-groups], [tool.uv]."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from envdoctor import versions
from envdoctor.facts.declared.interface import (
    Declaration,
    Found,
    LineIndex,
    line_of,
    requirement,
    spend,
    toml_of,
)

PATTERNS = ("pyproject.toml",)


def read(path: Path, shown: str) -> Found:
    """Every requirement the project declares: base dependencies, each extra and dependency
    group (a training image installs some of them: all are judged), and uv's constraint and
    override lists (they pin what uv installs). ``[tool.uv.sources]`` entries point at a git
    or path source: no version to judge, said in a note."""
    data, lines = toml_of(path, shown)
    found = Found(files=[shown])
    project = _table(data.get("project"))
    lists: list[tuple[str, Any]] = [("[project].dependencies", project.get("dependencies"))]
    for extra, reqs in _table(project.get("optional-dependencies")).items():
        lists.append((f"extra {extra}", reqs))
    for group, reqs in _table(data.get("dependency-groups")).items():
        lists.append((f"group {group}", reqs))
    uv = _table(_table(data.get("tool")).get("uv"))
    for key in ("constraint-dependencies", "override-dependencies", "dev-dependencies"):
        lists.append((f"[tool.uv].{key}", uv.get(key)))
    said = [
        (key, t)
        for key, reqs in lists
        for t in (reqs if isinstance(reqs, list) else [])
        if isinstance(t, str)
    ]  # not {include-group = "…"}: its group is read on its own
    spend(shown, len(said))
    index = LineIndex(lines, [t for _, t in said])  # one pass for every dependency's line
    starts = {
        key: line_of(lines, key.rsplit(".", 1)[-1]) for key in dict(said) if key.startswith("[tool.uv]")
    }
    for key, text in said:
        # uv's lists repeat a requirement of [project] ("transformers==5.5.4"): found from their key on
        start = max(starts.get(key, 1) - 1, 0)
        decl = requirement(text, shown, index.find(text, start))
        if decl is not None:
            override = key == "[tool.uv].override-dependencies"
            found.declarations.append(replace(decl, override=True) if override else decl)
    python = project.get("requires-python")
    if isinstance(python, str) and versions.spec(python) is not None:
        found.declarations.append(
            Declaration(
                name="python",
                specifier=str(versions.spec(python)),
                file=shown,
                line=line_of(lines, "requires-python"),
            )
        )
    if project.get("dynamic") and "dependencies" in project.get("dynamic", []):
        found.notes.append(f"{shown}: dependencies are dynamic (computed by the build backend); not read")
    for name in _table(uv.get("sources")):
        found.notes.append(
            f"{shown}: [tool.uv.sources] {name} comes from a git/path/index "
            "source; its version is not judged unless a lock pins it"
        )
    return found


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
