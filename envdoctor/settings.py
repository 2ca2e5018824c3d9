"""``[tool.envdoctor]`` in the nearest pyproject.toml: default select / ignore / strict."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from envdoctor.errors import InputError

KEYS = {"select": list, "ignore": list, "strict": bool, "probe-timeout": (int, float)}


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def load_settings(start: Path | None = None) -> dict[str, Any]:
    path = find_pyproject(start)
    if path is None:
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(str(path), f"cannot read [tool.envdoctor]: {exc}") from None
    except RecursionError:
        raise InputError(str(path), "cannot read [tool.envdoctor]: nested too deeply") from None
    tool = data.get("tool", {})
    table = tool.get("envdoctor", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise InputError(str(path), "[tool.envdoctor] must be a table")
    for key, value in table.items():
        kind = KEYS.get(key)
        if kind is None:
            raise InputError(str(path), f"[tool.envdoctor] unknown key '{key}' "
                                        f"(known: {', '.join(KEYS)})")
        if not isinstance(value, kind) or (
                isinstance(value, list) and not all(isinstance(v, str) for v in value)):
            raise InputError(str(path), f"[tool.envdoctor] '{key}' has the wrong type")
    return table
