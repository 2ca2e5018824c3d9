"""Errors that mean "your input is wrong": the CLI prints them and exits 2, no traceback."""

from __future__ import annotations

import os
import stat

from envdoctor.units import size_text


class InputError(Exception):
    """Unreadable or invalid input; ``source`` names it (a file, a variable, a flag)."""

    def __init__(self, source: str, problem: str) -> None:
        from envdoctor.redact import clean  # an error message is output: no secret, no ESC

        source, problem = clean(str(source), limit=500), clean(str(problem), limit=1000)
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem


class UnreadableInput(InputError):
    """The file itself cannot be read as what it claims to be: missing, a device, too large,
    not UTF-8, malformed YAML/JSON, a hostile structure. Callers that skip files which are
    merely of another kind (the hook) must still stop on this."""


class InvalidSyntax(UnreadableInput):
    """A config file that is not valid YAML / JSON (a typo, not a hostile structure): exit 2
    where it is given (``check --config``); the hook reports one of a repository's files as a
    finding (CFG006) and judges the others."""


def read_input_text(path: str | os.PathLike[str], source: str, max_bytes: int, too_big: str = "") -> str:
    """A user's file as UTF-8 text, reading at most ``max_bytes`` (+1 to tell it is larger);
    every problem is an ``InputError`` naming ``source``."""
    require_regular_file(path, source)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode) and os.path.realpath(path) != os.devnull:
                raise UnreadableInput(source, "not a regular file (a pipe or a device)")
            raw = fh.read(max_bytes + 1) or b""
    except BlockingIOError:
        raise UnreadableInput(source, "cannot read: it blocks (a device or kernel file)") from None
    except OSError as exc:
        raise UnreadableInput(source, f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise UnreadableInput(source, f"larger than {size_text(max_bytes, 'MiB', floor=True)}{too_big}")
    encoding = next((name for bom, name in BOMS if raw.startswith(bom)), None)
    try:
        if encoding is not None:  # a byte-order mark names the encoding (pip reads such files too)
            return raw.decode(encoding).lstrip("\ufeff")
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableInput(source, f"not {encoding or 'UTF-8'} text (byte {exc.start})") from None


#: byte-order marks and the encoding each names, longest first (UTF-32's LE mark begins with
#: UTF-16's): a requirements file PowerShell's `pip freeze > file` wrote is UTF-16 with its mark
BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


#: Kernel file systems: their "regular" files block (/proc/kmsg) or never end
#: (/proc/self/pagemap); no input of envdoctor lives there.
PSEUDO = ("/proc/", "/sys/", "/dev/")


def require_regular_file(path: str | os.PathLike[str], source: str) -> None:
    """Refuse what is not a plain file (a FIFO would block, /dev/zero never ends) and files of
    the kernel's pseudo file systems (/proc, /sys, /dev)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise UnreadableInput(source, f"cannot read: {exc.strerror or exc}") from None
    real = os.path.realpath(path)
    if real != os.devnull and real.startswith(PSEUDO):
        raise UnreadableInput(
            source,
            f"a kernel file ({real.split('/')[1]}), not an input file; copy what you need into a file first",
        )
    if stat.S_ISDIR(mode):
        raise UnreadableInput(source, "cannot read: Is a directory")
    if not stat.S_ISREG(mode) and os.path.realpath(path) != os.devnull:
        raise UnreadableInput(
            source,
            "not a regular file (a pipe or a device); give a file path "
            "(or - for standard input where accepted)",
        )
