"""Options shared by the commands that check (check, the pre-commit hook)."""

from __future__ import annotations

import os
import sys

import click

from envdoctor.report import FORMATS


def split_list(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def use_color(stream: object = None) -> bool:
    if os.environ.get("NO_COLOR") is not None:
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


format_option = click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)),
                             default="text", show_default=True, help="Output format.")
output_option = click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
                             help="Write the report to this file (stdout if absent).")
verbose_option = click.option("-v", "--verbose", is_flag=True,
                              help="Show every check, evidence and skipped rules.")
select_option = click.option("--select", multiple=True, metavar="IDS",
                             help="Only these rules (ids, id prefixes like LAY, or names).")
ignore_option = click.option("--ignore", multiple=True, metavar="IDS",
                             help="Skip these rules (ids, prefixes or names).")
strict_option = click.option("--strict", is_flag=True, default=None,
                             help="Exit 1 on warnings too.")


def emit(text: str, output: str | None) -> None:
    """Print or write what a command produced, through the last redaction pass."""
    from envdoctor.redact import output_text

    text = output_text(text)
    if output and output != "-":
        try:
            with open(output, "w", encoding="utf-8", errors="backslashreplace") as fh:
                fh.write(text)
        except OSError as exc:
            from envdoctor.errors import InputError

            raise InputError(f"--output {output}", exc.strerror or str(exc)) from None
    else:
        click.echo(text, nl=False)
