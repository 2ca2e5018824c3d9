"""``[tool.envdoctor]`` in the nearest pyproject.toml: default select / strict, and the
suppressions (``ignore``: rules or single findings silenced with a reason, read into
``envdoctor.suppression.Suppression``)."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envdoctor.errors import InputError, read_input_text

if TYPE_CHECKING:  # loaded only for a [tool.envdoctor] ignore entry
    from envdoctor.suppression import Suppression

KEYS: dict[str, type | tuple[type, ...]] = {
    "select": list,
    "ignore": list,
    "strict": bool,
    "probe-timeout": (int, float),
}


MAX_BYTES = 4 * 1024 * 1024
MAX_TIMEOUT_S = 7 * 24 * 3600.0


def valid_timeout(value: object, source: str) -> float:
    """A probe wall-clock limit: a finite number of seconds above 0 (``nan``, ``inf``, ``-1``,
    ``true`` and ``"60"`` are input errors naming ``source``)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(source, f"expected a number of seconds, got {value!r:.40}")
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise InputError(
            source,
            f"must be a number of seconds above 0 and at most "
            f"{MAX_TIMEOUT_S:.0f} (a week), got {value!r:.40}",
        )
    return float(value)


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            return None
    return None


#: TOML values parsed at most (``=``, ``,`` and lines counted, in C, before parsing): Python's
#: TOML parser takes 3-7 µs per value, up to 2 s per MiB of short values
MAX_TOML_VALUES = 300_000


def parse_toml(text: str, source: str, problem: str = "invalid TOML") -> dict[str, Any]:
    """``text`` parsed as TOML (tomllib, tomli before 3.11); a syntax error, a structure nested
    too deeply or more than ``MAX_TOML_VALUES`` values is an ``InputError`` naming ``source``.
    The last texts parsed are kept: the working folder's pyproject.toml is read for
    ``[tool.envdoctor]`` and, by the hook, for its dependencies, parsed once (do not change
    the result)."""
    values = text.count("=") + text.count(",") + text.count("\n")
    if values > MAX_TOML_VALUES:
        raise InputError(
            source,
            f"{problem}: {values:,} TOML values and lines, more than "
            f"{MAX_TOML_VALUES:,} (a large uv.lock has about 90,000); "
            "not parsed",
        )
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return _loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(source, f"{problem}: {exc}") from None
    except RecursionError:
        raise InputError(source, f"{problem}: nested too deeply") from None
    except ValueError as exc:  # tomllib converts integers itself: Python's 4,300-digit limit
        said = str(exc).split(";")[0]
        if "integer string conversion" in said:
            said = f"a number of more than {getattr(sys, 'get_int_max_str_digits', lambda: 4300)():,} digits"
        raise InputError(source, f"{problem}: {said}") from None


@lru_cache(maxsize=2)
def _loads(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    data: dict[str, Any] = tomllib.loads(text)
    return data


def load_settings(start: Path | None = None) -> dict[str, Any]:
    path = find_pyproject(start)
    if path is None:
        return {}
    text = read_input_text(path, str(path), MAX_BYTES, "; a pyproject.toml is a few KB")
    data = parse_toml(text, str(path), "cannot read [tool.envdoctor]")
    tool = data.get("tool", {})
    table = tool.get("envdoctor", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise InputError(str(path), "[tool.envdoctor] must be a table")
    for key, value in table.items():
        kind = KEYS.get(key)
        if kind is None:
            raise InputError(str(path), f"[tool.envdoctor] unknown key '{key}' (known: {', '.join(KEYS)})")
        if (
            not isinstance(value, kind)
            or (isinstance(value, bool) and kind is not bool)
            or (key != "ignore" and isinstance(value, list) and not all(isinstance(v, str) for v in value))
        ):
            raise InputError(str(path), f"[tool.envdoctor] '{key}' has the wrong type")
        if key == "probe-timeout":
            valid_timeout(value, f"{path} [tool.envdoctor] probe-timeout")
    out = dict(table)
    if "ignore" in out:  # suppressions, each with its reason (envdoctor/suppression.py)
        out["ignore"] = parse_ignore(out["ignore"], f"{path} [tool.envdoctor] ignore")
    return out


#: Evidence values a table entry may match: scalars (a list in the evidence matches when it holds
#: the value)
_SCALAR = (str, int, float, bool)


def parse_ignore(value: object, source: str) -> list[Suppression]:
    """``[tool.envdoctor] ignore`` read into suppressions; anything else is an ``InputError``
    naming ``source``."""
    from envdoctor.suppression import Suppression

    if not isinstance(value, list):
        raise InputError(source, "'ignore' must be a list of rules or {rule = …, reason = …} tables")
    out = []
    for n, item in enumerate(value, 1):
        where = f"{source} entry {n}"
        if isinstance(item, str):
            out.append(Suppression(rule=item, source=source))
            continue
        if not isinstance(item, dict):
            raise InputError(where, f"expected a rule id or a table, got {type(item).__name__}")
        rule, reason = item.get("rule"), item.get("reason", "")
        if not isinstance(rule, str) or not rule:
            raise InputError(where, 'a table needs rule = "ID" (e.g. {rule = "LAY003", reason = "…"})')
        if not isinstance(reason, str):
            raise InputError(where, "reason must be a string")
        match = {k: v for k, v in item.items() if k not in ("rule", "reason")}
        for k, v in match.items():
            if not isinstance(v, _SCALAR):
                raise InputError(where, f"{k} must be a string or a number (an evidence value to match)")
        out.append(Suppression(rule=rule, reason=reason.strip(), where=match, source=source))
    return out
