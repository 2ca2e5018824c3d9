"""Errors that mean "your input is wrong": the CLI prints them and exits 2, no traceback."""

from __future__ import annotations

import os
import stat


class InputError(Exception):
    """Unreadable or invalid input; ``source`` names it (a file, a variable, a flag)."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem


def read_input_text(path: str | os.PathLike[str], source: str, max_bytes: int,
                    too_big: str = "") -> str:
    """A user's file as UTF-8 text, reading at most ``max_bytes`` (+1 to tell it is larger);
    every problem is an ``InputError`` naming ``source``."""
    require_regular_file(path, source)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(source, f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise InputError(source, f"larger than {max_bytes // (1024 * 1024)} MiB{too_big}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, f"not UTF-8 text (byte {exc.start})") from None


def require_regular_file(path: str | os.PathLike[str], source: str) -> None:
    """Refuse what is not a plain file (a FIFO would block, /dev/zero never ends)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(source, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise InputError(source, "cannot read: Is a directory")
    if not stat.S_ISREG(mode) and os.path.realpath(path) != os.devnull:
        raise InputError(source, "not a regular file (a pipe or a device); give a file path "
                                 "(or - for standard input where accepted)")
