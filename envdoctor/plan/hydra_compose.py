"""The config a Hydra entry composes (``@hydra.main(config_path=…, config_name=…)``), read from
the repository's files without Hydra: the primary file, its ``defaults:`` list (``_self_``, a
group's option placed at the group's package, ``override`` / ``optional`` entries, a group file's
own defaults, ``# @package _global_``) and the launch line's overrides (``group=option``,
``a.b=value``, ``+a.b=value``, ``~a.b``). Values with an interpolation (``${…}``) stay as
written: ``checks`` reads them as unknown. Where a file is not in the repository (a
``pkg://`` path, a name not given) the composition is not done and why is said.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

MAX_DEPTH = 6  # nested defaults lists followed
MAX_BYTES = 1024 * 1024


class Unread(Exception):
    """Why the composed config could not be read."""


def _load(path: Path) -> tuple[dict[str, Any], bool]:
    """A config file's mapping and whether it is placed at the root (``# @package _global_``)."""
    from envdoctor.parsing import parse_mapping

    try:
        if path.stat().st_size > MAX_BYTES:
            raise Unread(f"{path} is over 1 MiB")
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        raise Unread(f"{path} is not in the repository") from None
    head = next((x for x in text.splitlines() if x.strip()), "")
    glob = head.startswith("#") and "@package" in head and "_global_" in head
    try:
        data = parse_mapping(text, str(path), False) if text.strip() else {}
    except Exception as exc:  # noqa: BLE001 - a file that does not parse is unread, said
        raise Unread(f"{path} does not parse: {exc}") from None
    return (data if isinstance(data, dict) else {}), glob


def _file(folder: Path, name: str) -> Path:
    return folder / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")


def merge(into: dict[str, Any], data: dict[str, Any]) -> None:
    """``data`` merged into ``into`` (mappings key by key, anything else replaced)."""
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def _place(into: dict[str, Any], package: tuple[str, ...], data: dict[str, Any]) -> None:
    for part in package:
        inner = into.get(part)
        into = inner if isinstance(inner, dict) else into.setdefault(part, {})
    merge(into, data)


def _compose(
    path: Path, root: Path, group: str, choices: dict[str, Any], depth: int
) -> tuple[dict[str, Any], bool]:
    """The file at ``path`` (of config group ``group``, "" for the primary) with its defaults."""
    if depth > MAX_DEPTH:
        raise Unread(f"{path}: defaults nested over {MAX_DEPTH} deep")
    data, glob = _load(path)
    defaults = data.pop("defaults", None) or []
    if not isinstance(defaults, list):
        raise Unread(f"{path}: its defaults is not a list")
    out: dict[str, Any] = {}
    self_done = False
    for entry in defaults:
        if entry == "_self_":
            merge(out, data)
            self_done = True
            continue
        if isinstance(entry, str):  # a config of the same group
            base = root / group if group else root
            sub, _ = _compose(_file(base, entry), root, group, choices, depth + 1)
            merge(out, sub)
            continue
        if not isinstance(entry, dict) or len(entry) != 1:
            raise Unread(f"{path}: a defaults entry envdoctor does not read ({entry!r})")
        ((key, option),) = entry.items()
        words = str(key).split()
        optional = "optional" in words[:-1]
        name, _, package = words[-1].partition("@")
        full = f"{group}/{name}" if group and not name.startswith("/") else name.lstrip("/")
        option = choices.get(full, option)
        if option is None:
            continue
        for one in option if isinstance(option, list) else [option]:
            target = _file(root / full, str(one))
            if optional and not target.is_file():
                continue
            sub, sub_glob = _compose(target, root, full, choices, depth + 1)
            where = "" if sub_glob or package == "_global_" else package or full.replace("/", ".")
            _place(out, tuple(p for p in where.split(".") if p), sub)
    if not self_done:
        merge(out, data)
    return out, glob


def _value(text: str) -> Any:
    from envdoctor.parsing import parse_mapping

    try:
        return parse_mapping(f"v: {text}\n", "override", False).get("v")
    except Exception:  # noqa: BLE001 - an override that is no YAML scalar: the text itself
        return text


def compose(
    script: str, config_path: str | None, config_name: str | None, args: list[str]
) -> tuple[dict[str, Any], str]:
    """The composed config and the primary file read; raises ``Unread`` saying why not."""
    if config_path is None or config_name is None:
        missing = "config_path" if config_path is None else "config_name"
        raise Unread(f"@hydra.main gives no literal {missing}")
    if "://" in config_path:
        raise Unread(f"its config_path {config_path} is a package's, not a folder of the repository")
    root = (Path(os.path.dirname(os.path.abspath(script))) / config_path).resolve()
    primary = _file(root, config_name)
    if not primary.is_file():
        raise Unread(f"{primary} is not in the repository")
    choices: dict[str, Any] = {}
    sets: list[tuple[tuple[str, ...], Any]] = []
    drops: list[tuple[str, ...]] = []
    for arg in args:
        if arg.startswith("-") or ("=" not in arg and not arg.startswith("~")):
            continue
        key, _, text = arg.partition("=")
        if key.startswith("~"):
            drops.append(tuple(key.lstrip("~").split(".")))
            continue
        key = key.lstrip("+")
        if "." not in key and (root / key).is_dir():
            choices[key] = text
        elif key.replace(".", "").replace("_", "").replace("-", "").isalnum():
            sets.append((tuple(key.split(".")), _value(text)))
    data, _ = _compose(primary, root, "", choices, 0)
    for path, value in sets:
        _place(data, path[:-1], {path[-1]: value})
    for path in drops:
        inner: Any = data
        for part in path[:-1]:
            inner = inner.get(part) if isinstance(inner, dict) else None
        if isinstance(inner, dict):
            inner.pop(path[-1], None)
    return data, str(primary)
