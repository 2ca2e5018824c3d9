"""The REP rules' fixes as data: line edits of the repository's launch scripts (``FileEdit``).

Each is cut from the file's lines as ``envdoctor hook --fix`` read them (``facts.extra
["repo_texts"]``: file -> its lines); without them (a plain ``hook`` run) a rule gives its fix as
text only. ``hook --fix`` proves each edit on a scratch copy of the repository (the shell reader
run again on the edited files) before it writes it. A fix whose value only the user knows (an
unset variable's value, a machine path the repository holds no copy of, which GPUs are free) has
no edit.
"""

from __future__ import annotations

import re
from typing import Any

from envdoctor.checks.context import Context
from envdoctor.findings import FileEdit, Remedy


def _lines(ctx: Context, file: str) -> list[str] | None:
    texts = ctx.facts.extra.get("repo_texts") or {}
    got = texts.get(file)
    return list(got) if isinstance(got, list) else None


def _one(file: str, line: int, old: str, new: str | None) -> FileEdit:
    return FileEdit(path=file, line=line, old=(old,), new=() if new is None else (new,))


def lf_ends(ctx: Context, file: str) -> Remedy | None:
    """REP004: every line end of the file to LF."""
    if _lines(ctx, file) is None:
        return None
    return Remedy(files=(FileEdit(path=file, eol="lf"),), fix=f"convert {file} to LF line ends")


_ASSIGN = re.compile(r"^(?P<indent>\s*)(?P<name>[A-Za-z_][A-Za-z0-9_]*)=")


def export_line(ctx: Context, file: str, numbers: list[int], *names: str) -> Remedy | None:
    """REP003 / REP006: ``NAME=value`` alone on its line becomes ``export NAME=value``."""
    lines = _lines(ctx, file)
    if lines is None:
        return None
    edits = []
    for number, name in zip(numbers, names, strict=False):
        if not 1 <= number <= len(lines):
            return None
        old = lines[number - 1]
        m = _ASSIGN.match(old)
        if m is None or m["name"] != name:
            return None
        edits.append(_one(file, number, old, f"{m['indent']}export {old[len(m['indent']) :]}"))
    said = ", ".join(f"line {n}" for n in numbers)
    return Remedy(files=tuple(edits), fix=f"export {', '.join(names)} in {file} ({said})")


_ESCAPED_SPACE = re.compile(r"\\[ \t]+(#.*)?$")


def _option(line: str) -> bool:
    return line.lstrip().startswith("-")


def continue_lines(ctx: Context, seen: dict[str, Any]) -> Remedy | None:
    """REP005: the command's cut line continued (`` \\``, the space after a ``\\`` removed, or a
    commented-out option line between taken out), and each option line after it but the last."""
    file, nxt = str(seen["file"]), int(seen["next_line"])
    lines = _lines(ctx, file)
    if lines is None or not 2 <= nxt <= len(lines):
        return None
    cut = nxt - 1
    old = lines[cut - 1]
    edits: list[FileEdit] = []
    if seen.get("escaped_space"):
        edits.append(_one(file, cut, old, _ESCAPED_SPACE.sub("\\\\", old)))
    elif seen.get("comment_cut"):
        if not old.lstrip().startswith("#"):
            return None
        edits.append(_one(file, cut, old, None))
    else:
        if old.rstrip().endswith("\\") or old.lstrip().startswith("#") or " #" in old:
            return None
        edits.append(_one(file, cut, old, old.rstrip() + " \\"))
    # the option lines that follow, up to the last: each continued too
    run = nxt
    while run < len(lines) and _option(lines[run]) and _option(lines[run - 1]):
        run += 1
    for number in range(nxt, run):
        text = lines[number - 1]
        if text.rstrip().endswith("\\") or " #" in text:
            continue
        edits.append(_one(file, number, text, text.rstrip() + " \\"))
    return Remedy(files=tuple(edits), fix=f"continue the command of {file} line {seen['line']} with ` \\`")


_LIST_VALUES = re.compile(r",(?=[\s\\]|$)")


def no_commas(ctx: Context, seen: dict[str, Any]) -> Remedy | None:
    """REP007: the commas after the list option's values taken out, on the option's line."""
    file, number, option = str(seen["file"]), int(seen["line"]), str(seen["option"])
    lines = _lines(ctx, file)
    if lines is None or not 1 <= number <= len(lines):
        return None
    for k in range(number, min(number + 40, len(lines)) + 1):  # the option may be on a continuation
        old = lines[k - 1]
        at = old.find(option)
        if at < 0:
            continue
        head, rest = old[: at + len(option)], old[at + len(option) :]
        nxt = re.search(r"\s--?[A-Za-z]", rest)
        seg, tail = (rest[: nxt.start()], rest[nxt.start() :]) if nxt else (rest, "")
        new = head + _LIST_VALUES.sub("", seg) + tail
        if new == old:
            return None
        return Remedy(
            files=(_one(file, k, old, new),), fix=f"take the commas out of {option}'s values in {file}"
        )
    return None


def machine_paths_held(ctx: Context, seen: dict[str, Any]) -> Remedy | None:
    """REP009: each machine path pointed at the repository's own copy, when every use has one."""
    uses = list(seen.get("uses") or [])
    if not uses or int(seen.get("count") or 0) != len(uses) or not all(u.get("held") for u in uses):
        return None
    edits: list[FileEdit] = []
    texts: dict[tuple[str, int], str] = {}
    for u in uses:
        file, number = str(u["file"]), int(u["line"])
        lines = _lines(ctx, file)
        if lines is None or not 1 <= number <= len(lines):
            return None
        now = texts.get((file, number), lines[number - 1])
        if str(u["path"]) not in now:
            return None
        texts[(file, number)] = now.replace(str(u["path"]), str(u["held"]))
    for (file, number), new in texts.items():
        lines = _lines(ctx, file) or []
        edits.append(_one(file, number, lines[number - 1], new))
    return Remedy(files=tuple(edits), fix="point each machine path at the repository's own copy")


_UTIL = re.compile(r"(--gpu[-_]memory[-_]utilization(?:=|\s+))(['\"]?)1(?:\.0*)?\2(?=\s|$|\\)")


def lower_memory(ctx: Context, seen: dict[str, Any]) -> Remedy | None:
    """REP011: the server's --gpu-memory-utilization set to 0.9 (vLLM's default)."""
    file, number = str(seen["file"]), int(seen["line"])
    lines = _lines(ctx, file)
    if lines is None or not 1 <= number <= len(lines):
        return None
    k = number
    while k <= len(lines):
        old = lines[k - 1]
        if _UTIL.search(old):
            return Remedy(
                files=(_one(file, k, old, _UTIL.sub(r"\g<1>0.9", old, count=1)),),
                fix=f"set --gpu-memory-utilization 0.9 in {file} line {k}",
            )
        if not old.rstrip().endswith("\\"):
            return None
        k += 1
    return None


def background_server(ctx: Context, seen: dict[str, Any]) -> Remedy | None:
    """REP012: the server's command ends in ``&`` (TRL's client waits for the server to come up
    before the first generation, so the launch after it may start at once)."""
    file, number = str(seen["file"]), int(seen["line"])
    lines = _lines(ctx, file)
    if lines is None or not 1 <= number <= len(lines):
        return None
    k = number
    while k < len(lines) and lines[k - 1].rstrip().endswith("\\"):
        k += 1
    old = lines[k - 1]
    if " #" in old or old.rstrip().endswith(("&", ";", "|")):
        return None
    return Remedy(
        files=(_one(file, k, old, old.rstrip() + " &"),),
        fix=f"start the server in the background: end {file} line {k} with `&`",
    )


def point_at(ctx: Context, seen: dict[str, Any]) -> Remedy | None:
    """REP001 / REP002: the missing path replaced by the file of the same name the repository
    holds (``near``), on the line that names it (or a continuation line of its command)."""
    near, written = str(seen.get("near") or ""), str(seen.get("written") or "")
    file, number = str(seen["file"]), int(seen["line"])
    lines = _lines(ctx, file)
    if not near or not written or lines is None or not 1 <= number <= len(lines):
        return None
    k = number
    while k <= len(lines):
        old = lines[k - 1]
        if old.count(written) == 1:
            return Remedy(
                files=(_one(file, k, old, old.replace(written, near)),),
                fix=f"point {file} line {k} at `{near}`",
            )
        if not old.rstrip().endswith("\\"):
            return None
        k += 1
    return None
