"""File edits of a remedy (``FileEdit``): applied to a file's text, and to the plan in memory.

A remedy that edits a file (a config key set twice, a keyword the training script gives TRL's
trainer, a launch script's line) is proved like any other: the edit is applied to the file's text
in memory (``Plan.edited``), what the plan reads from that file is read again from the edited
text (the config file's mapping and its keys set twice; the script's calls into TRL), and the
rules run again. Files the plan does not read (a repository's launch scripts, its requirement
files) are read again by the caller's ``reread`` (``envdoctor hook --fix``). Nothing is written
here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envdoctor.findings import FileEdit

#: the largest file an edit reads (a launch script, a config, a training script)
MAX_BYTES = 2 * 1024 * 1024


class EditError(ValueError):
    """An edit that does not fit the text (its lines read otherwise now)."""


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _end(line: str, default: str) -> str:
    return line[len(_body(line)) :] or default


def edit_text(text: str, edit: FileEdit) -> str:
    """``text`` with ``edit`` applied; ``EditError`` when its ``old`` lines are not there."""
    if edit.eol is not None:
        if edit.eol != "lf":
            raise EditError(f"{edit.path}: unknown line end {edit.eol!r}")
        return text.replace("\r\n", "\n")
    lines = _lines(text)
    start = edit.line - 1
    if start < 0 or start > len(lines) or start + len(edit.old) > len(lines):
        raise EditError(f"{edit.path}: line {edit.line} is not in the file")
    now = [_body(x) for x in lines[start : start + len(edit.old)]]
    if now != list(edit.old):
        raise EditError(f"{edit.path} line {edit.line} no longer reads as the fix expects")
    crlf = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    last_end = _end(lines[start + len(edit.old) - 1], crlf) if edit.old else crlf
    new = [line + crlf for line in edit.new]
    if new and edit.old:
        new[-1] = edit.new[-1] + last_end
    if edit.old and start + len(edit.old) == len(lines) and not lines[-1].endswith("\n") and new:
        new[-1] = edit.new[-1]  # the file's last line had no line end: it still has none
    return "".join([*lines[:start], *new, *lines[start + len(edit.old) :]])


def edit_all(text: str, edits: Iterable[FileEdit]) -> str:
    for edit in edits:
        text = edit_text(text, edit)
    return text


def key(path: str) -> str:
    """The one spelling of a path that edits of it share."""
    return os.path.normpath(path)


#: byte-order marks a text file may start with, and the codec that reads it (pip reads a
#: requirement file written by PowerShell's `pip freeze >` as UTF-16)
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def encoding_of(data: bytes) -> str:
    return next((codec for bom, codec in _BOMS if data.startswith(bom)), "utf-8")


def decode(data: bytes) -> str:
    """A file's text, by its byte-order mark (UTF-8 without one)."""
    return data.decode(encoding_of(data))


def encode(text: str, like: bytes | None) -> bytes:
    """``text`` in the encoding of the file's bytes ``like`` now (its mark kept)."""
    return text.encode(encoding_of(like or b""))


def read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise EditError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise EditError(f"{path}: over {MAX_BYTES // (1024 * 1024)} MiB, not edited")
    try:
        return decode(data)
    except UnicodeDecodeError:
        raise EditError(f"{path}: not UTF-8 or UTF-16 text, not edited") from None


def texts_after(edits: Iterable[FileEdit], base: dict[str, str] | None = None) -> dict[str, str]:
    """Each edited file's text after ``edits`` (its text now from ``base``, else from disk)."""
    out = dict(base or {})
    for edit in edits:
        k = key(edit.path)
        if k not in out:
            out[k] = read_text(edit.path)
        out[k] = edit_text(out[k], edit)
    return out


def reread_plan(plan: Any, before: dict[str, str], touched: set[str], relaunched: bool = False) -> None:
    """What ``plan`` reads from the files of ``touched`` (keys of ``plan.edited``) read again
    from their edited text: a config file's keys set twice (CFG007) and the keys the edit changed
    (the file parsed before and after it: a key another fix set in memory keeps that value), the
    training script's calls into TRL (CFG008; also after ``relaunched``, which read the script
    from disk again)."""
    from envdoctor.parsing import parse_mapping

    for path, what in ((plan.config_path, "config"), (plan.accelerate_path, "accelerate")):
        if not path or key(path) not in touched:
            continue
        is_json = str(path).endswith(".json")
        was = parse_mapping(before.get(key(path)) or read_text(str(path)), str(path), is_json)
        twice: list[dict[str, Any]] = []
        data = parse_mapping(plan.edited[key(path)], str(path), is_json, twice)
        plan.duplicate_keys = [d for d in plan.duplicate_keys if key(str(d.get("file"))) != key(path)]
        plan.duplicate_keys += [{**d, "file": str(path), "what": f"{what} file"} for d in twice]
        target = plan.accelerate if what == "accelerate" else plan.config
        origin = f"config file {path}"
        for k in set(was) | set(data):
            if was.get(k, _ABSENT) == data.get(k, _ABSENT):
                continue
            if what == "config" and plan.config_origin.get(k, origin) != origin:
                continue  # the command line (or the script's code) sets it: the file's value does not run
            if k in data:
                target[k] = data[k]
                if what == "config":
                    plan.config_origin[k] = origin
            else:
                target.pop(k, None)
                if what == "config":
                    plan.config_origin.pop(k, None)
    script = plan.script
    if script is not None and script.path and key(script.path) in plan.edited:
        if key(script.path) not in touched and not relaunched:
            return
        from dataclasses import replace

        from envdoctor.plan.script_reader import trl_calls_of_text

        calls, problem = trl_calls_of_text(script.path, plan.edited[key(script.path)])
        if problem is not None:
            raise EditError(f"{script.path} {problem} after the edit")
        plan.script = replace(script, trl_calls=tuple(calls))


_ABSENT = object()


def on_disk(paths: Iterable[str]) -> dict[str, str]:
    """The texts of ``paths`` as they are on disk now (for a diff)."""
    return {key(p): read_text(p) for p in paths if Path(p).is_file()}


#: A file of the repository with another name (``ln ~/.bashrc grpo.yaml``): written in place, the
#: other name, maybe outside the repository, would change with it.
_HARD_LINKED = "a hard link (the file has other names, maybe outside the repository): not written in place"


def unwritable(path: str | os.PathLike[str], root: Path | None = None) -> str | None:
    """Why a fix may not write ``path``, or None. A fix writes the file it was given and no
    other: never through a symbolic link (a committed ``grpo.yaml -> ~/.bashrc`` would make
    ``hook --fix`` edit a file of the user's outside the repository), never a FIFO or a device,
    and with a ``root`` (``hook --fix``) never a file whose real path leaves the repository (a
    folder linked out of it) nor one with other names (a hard link: rewritten in place, its
    other name outside the repository would change too)."""
    import stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    if st is not None and stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return (
            f"a symbolic link (to {target}): a fix writes only the file named, never through a "
            "link; give the link's target itself to have it fixed"
        )
    if st is not None and not stat.S_ISREG(st.st_mode):
        return "not a regular file (a pipe, a device or a folder)"
    if root is not None and st is not None and st.st_nlink > 1:
        return _HARD_LINKED
    if root is not None:
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(Path(os.path.realpath(root))):
            return f"outside the repository (its real path is {real})"
    return None


def write_file(path: str | os.PathLike[str], text: str, root: Path | None = None) -> None:
    """``text`` written into ``path`` in the encoding of what it holds now (its byte-order
    mark kept), refused (``InputError`` naming ``path``) as :func:`unwritable` says. The file is
    opened without following a link and without blocking, and checked to be a regular file on
    the open descriptor itself, so a link or a FIFO put in its place after the check is not
    written through either."""
    import stat

    from envdoctor.errors import InputError

    why = unwritable(path, root)
    if why is not None:
        raise InputError(str(path), f"not written: {why}")
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise InputError(str(path), f"cannot write it: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(str(path), "not written: not a regular file (a pipe, a device or a folder)")
        if root is not None and st.st_nlink > 1:
            raise InputError(str(path), f"not written: {_HARD_LINKED}")
        now = os.read(fd, 4)
        data = encode(text, now)
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise InputError(str(path), f"cannot write it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
