"""Config changes written into the config file's own text: comments, order and layout kept.

YAML is edited line by line (a round trip through a YAML library drops comments); JSON is
loaded and written back in its key order and indent. Every edit is read back with the
parser ``check`` uses and must give exactly the mapping wanted, else nothing is written.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envdoctor.errors import InputError
from envdoctor.parsing import parse_mapping

_PLAIN = re.compile(r"[A-Za-z_./][\w./:@+-]*")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def yaml_scalar(value: Any) -> str:
    """``value`` as one YAML flow value (a plain word where it reads back as that string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _RESERVED:
        return value
    return json.dumps(value)  # JSON is YAML's flow style: lists, dicts, quoted strings


def _key_line(line: str) -> str | None:
    """The top-level key a line sets (``key: value``, ``"key": value``), or None."""
    m = re.match(r"""^(?:"([^"]+)"|'([^']+)'|([A-Za-z_][\w.-]*))\s*:(?:\s|$)""", line)
    return (m.group(1) or m.group(2) or m.group(3)) if m else None


def _value_end(lines: list[str], i: int) -> int:
    """The index after the value of the key on line ``i`` (its block lines included)."""
    j = i + 1
    while j < len(lines):
        text = lines[j]
        if text.strip() == "" or text.startswith((" ", "\t")) or text.startswith("- "):
            j += 1
            continue
        if text.lstrip().startswith("#") and j + 1 < len(lines) and lines[j + 1].startswith((" ", "\t")):
            j += 1
            continue
        break
    while j > i + 1 and lines[j - 1].strip() == "":  # blank lines after the value stay
        j -= 1
    return j


def _comment(line: str) -> str:
    """A trailing ``  # comment`` of a one-line value (outside quotes), or ''."""
    in_s = in_d = False
    for i, ch in enumerate(line):
        if ch == "'" and not in_d:
            in_s = not in_s
        elif ch == '"' and not in_s:
            in_d = not in_d
        elif ch == "#" and not in_s and not in_d and i > 0 and line[i - 1] in " \t":
            return "  " + line[i:].rstrip("\n")
    return ""


def edit_yaml(text: str, config_set: dict[str, Any], config_remove: tuple[str, ...] | list[str]) -> str:
    """``text`` with top-level keys set and removed, every other line as it was."""
    lines = text.splitlines(keepends=True)
    present = {_key_line(line) for line in lines}
    new_keys = [k for k in config_set if k not in present]
    values = parse_mapping(text, "config", is_json=False) if new_keys and config_remove else {}
    for key in list(config_remove):  # a rename (same value): the new key takes the old line
        new = next((k for k in new_keys if key in values and values[key] == config_set[k]), None)
        if new is None:
            continue
        for i, line in enumerate(lines):
            if _key_line(line) == key:
                new_keys.remove(new)
                lines[i : _value_end(lines, i)] = [f"{new}: {yaml_scalar(config_set[new])}{_comment(line)}\n"]
                config_remove = [k for k in config_remove if k != key]
                break
    for key in config_remove:
        for i, line in enumerate(lines):
            if _key_line(line) == key:
                del lines[i : _value_end(lines, i)]
                break
    for key, value in config_set.items():
        for i, line in enumerate(lines):
            if _key_line(line) == key:
                end = _value_end(lines, i)
                head = line.split(":", 1)[0]
                lines[i:end] = [f"{head}: {yaml_scalar(value)}{_comment(line)}\n"]
                break
        else:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines.append(f"{key}: {yaml_scalar(value)}\n")
    return "".join(lines)


def edit_json(text: str, config_set: dict[str, Any], config_remove: tuple[str, ...] | list[str]) -> str:
    """``text`` (a JSON object) with keys set and removed, in its key order and indent."""
    data = json.loads(text)
    for key in config_remove:
        data.pop(key, None)
    data.update(config_set)
    second = text.splitlines()[1] if len(text.splitlines()) > 1 else ""
    indent = len(second) - len(second.lstrip(" ")) or None
    return json.dumps(data, indent=indent) + ("\n" if text.endswith("\n") else "")


def edit_config(
    text: str, path: str, config_set: dict[str, Any], config_remove: tuple[str, ...] | list[str]
) -> str:
    """The config file's new text; refused (InputError naming the file) when the edit would
    not read back as the mapping wanted."""
    is_json = path.lower().endswith(".json") or text.lstrip().startswith("{")  # JSON is YAML too
    if path.lower().endswith(".toml"):
        raise InputError(path, "envdoctor fix edits YAML and JSON configs only; apply the changes by hand")
    old = parse_mapping(text, path, is_json=is_json)
    new_text = (edit_json if is_json else edit_yaml)(text, config_set, config_remove)
    wanted = {k: v for k, v in old.items() if k not in config_remove}
    wanted.update(config_set)
    if parse_mapping(new_text, path, is_json=is_json) != wanted:
        raise InputError(path, "could not edit it without changing other keys; apply the changes by hand")
    return new_text
