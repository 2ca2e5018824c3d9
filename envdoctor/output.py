"""Where a command's output goes: stdout or ``-o FILE``, through the last redaction pass.

Below the commands and the cluster run, which both print with it.
"""

from __future__ import annotations

import os
import sys

#: ``--no-color`` was given (the CLI sets it; https://no-color.org: NO_COLOR does the same)
NO_COLOR_FLAG = False


def use_color(stream: object = None) -> bool:
    """Whether to colour text: the stream is a terminal, and neither ``--no-color`` nor the
    NO_COLOR environment variable (any value) says otherwise."""
    if NO_COLOR_FLAG or os.environ.get("NO_COLOR") is not None:
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def emit(text: str, output: str | None) -> None:
    """Print or write what a command produced, through the last redaction pass."""
    from envdoctor.redact import output_text

    text = output_text(text)
    if output and output != "-":
        from envdoctor.errors import InputError

        try:
            fd = open_output(output)
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
                fh.write(text)
        except OSError as exc:
            raise InputError(f"--output {output}", exc.strerror or str(exc)) from None
    else:
        import click

        click.echo(text, nl=False)


def open_output(output: str) -> int:
    """A descriptor to write ``-o``'s file: a regular file is created or truncated; a FIFO,
    ``/dev/stdout`` or a process substitution (``-o >(gzip > r.gz)``) is written as it is, but
    opened non-blocking first, so a FIFO nobody reads is refused at once (ENXIO, exit 2)
    instead of waiting for ever. Block devices (disks) and directories are refused."""
    import errno
    import stat

    from envdoctor.errors import InputError

    source = f"--output {output}"
    try:
        mode = os.stat(output).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISBLK(mode):
        raise InputError(source, "a block device (a disk), not a file to write a report to")
    if mode is not None and stat.S_ISDIR(mode):
        raise InputError(source, "a directory, not a file")
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(output, flags | (os.O_TRUNC if mode is None or stat.S_ISREG(mode) else 0), 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise InputError(
                source,
                "a FIFO (named pipe) that nobody reads; start its reader first, or give a regular file",
            ) from None
        raise
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)  # a reader is there: write as to any pipe
    return fd
