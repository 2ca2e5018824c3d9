"""The command line: parses and dispatches; each subcommand lives in ``envdoctor/commands/``."""

from __future__ import annotations

import os
import sys

import click

from envdoctor import __version__

#: Each subcommand: its name -> (module under envdoctor.commands, function). A command's module
#: (and what it imports: the declared-stack readers, the memory plan, triage) loads only when
#: that command runs or help lists it.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "check"),
    "collect": ("collect", "collect"),
    "probe": ("probe", "probe"),
    "triage": ("triage", "triage"),
    "rules": ("rules", "rules"),
    "explain": ("rules", "explain"),
    "hook": ("hook", "hook"),
    "diff": ("diff", "diff"),
    "plan-memory": ("plan_memory", "plan_memory"),
    "fix": ("fix", "fix"),
}


class _LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            import importlib

            module, name = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"envdoctor.commands.{module}"), name)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


def _no_color(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        import envdoctor.output

        envdoctor.output.NO_COLOR_FLAG = True


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envdoctor")
@click.option(
    "--no-color",
    is_flag=True,
    expose_value=False,
    callback=_no_color,
    help="No colours in any command's output (as NO_COLOR=1 does).",
)
def cli() -> None:
    """Preflight checks for GRPO training with TRL + vLLM: versions, GPUs, layout, allocator.

    Shell completion (bash, zsh, fish) comes from click: eval "$(_ENVDOCTOR_COMPLETE=bash_source
    envdoctor)" in ~/.bashrc (zsh_source, fish_source for the others)."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: input errors exit 2 with a message, never a traceback."""
    from envdoctor.errors import InputError
    from envdoctor.redact import clean

    for stream in (sys.stdout, sys.stderr):  # text from a snapshot may hold lone surrogates
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        cli.main(args=argv, prog_name="envdoctor", standalone_mode=False)
    except InputError as exc:
        click.echo(f"envdoctor: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("envdoctor: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        # "unexpected extra argument (hf_…)" echoes input; click types message Final, yet it is
        # a plain attribute that show() reads
        exc.message = clean(exc.message)  # type: ignore[misc]
        exc.show()
        sys.exit(2)
    except click.exceptions.Exit as exc:
        _flush()
        sys.exit(exc.exit_code)
    except SystemExit:  # a command's own exit status: its output must still reach the reader
        from click.utils import PacifyFlushWrapper

        # click met EPIPE and exits 1 for it; click >= 8.2 serves the name through a module
        # __getattr__ typed object
        if isinstance(sys.stdout, PacifyFlushWrapper):  # type: ignore[arg-type]
            _quiet_stdout()
            sys.exit(141)
        _flush()
        raise
    except BrokenPipeError:  # `envdoctor rules | head`: the reader left; end quietly
        _quiet_stdout()
        sys.exit(141)
    except KeyboardInterrupt:
        click.echo("envdoctor: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # envdoctor's own bug: say so plainly
        if os.environ.get("ENVDOCTOR_DEBUG"):
            raise
        click.echo(
            f"envdoctor: internal error: {type(exc).__name__}: {clean(str(exc))} "
            "(set ENVDOCTOR_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(2)
    _flush()
    sys.exit(0)


def _flush() -> None:
    """Flush stdout; a reader that left (``| head``) ends the run quietly with 141."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(141)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that Python's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
