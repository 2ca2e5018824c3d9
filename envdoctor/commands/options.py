"""Options shared by the commands that check (check, the pre-commit hook)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from envdoctor.output import emit, open_output, use_color  # noqa: F401  (re-exported)
from envdoctor.report import FORMATS


def split_list(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(FORMATS)),
    default="text",
    show_default=True,
    help="Output format.",
)
#: the ``--format`` of the commands that print text or one JSON document (fix, plan-memory)
text_or_json_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the report to this file (stdout if absent).",
)
verbose_option = click.option(
    "-v", "--verbose", is_flag=True, help="Show every check, evidence and skipped rules."
)


def _no_color(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        import envdoctor.output

        envdoctor.output.NO_COLOR_FLAG = True


no_color_option = click.option(
    "--no-color",
    is_flag=True,
    expose_value=False,
    callback=_no_color,
    help="No colours (as does the NO_COLOR environment variable).",
)
quiet_option = click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print only the errors and the summary line (text; errors on stderr are kept).",
)
select_option = click.option(
    "--select", multiple=True, metavar="IDS", help="Only these rules (ids, id prefixes like LAY, or names)."
)
ignore_option = click.option(
    "--ignore", multiple=True, metavar="IDS", help="Skip these rules (ids, prefixes or names)."
)
strict_option = click.option("--strict", is_flag=True, default=None, help="Exit 1 on warnings too.")

config_option = click.option(
    "--config", "config", type=str, metavar="FILE", help="TRL GRPO config (YAML/JSON, GRPOConfig keys)."
)
accelerate_config_option = click.option(
    "--accelerate-config", type=str, metavar="FILE", help="accelerate config file."
)
launch_option = click.option(
    "--launch",
    multiple=True,
    metavar="CMD",
    help="A launch command line (repeatable; e.g. the trainer and `trl vllm-serve`).",
)


def facts_option(help: str):  # noqa: A002 - click's own keyword
    """``--facts FILE``: a snapshot from ``envdoctor collect`` instead of this machine."""
    return click.option("--facts", "facts_file", type=str, metavar="FILE", help=help)


assume_option = click.option(
    "--assume",
    multiple=True,
    metavar="NAME==VERSION",
    help="Judge as if this version were installed (repeatable), e.g. trl==1.16.0 when the "
    "training environment is not this one; packages not named and not installed here "
    "are then unknown, not missing.",
)

#: Config files are given with options; a bare word ending like one is a mistyped option.
_CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


class LaunchCommand(click.Command):
    """A command ending in a launch line. Options end at ``--`` or at the first word that is
    not an option, so a launcher's flags are never read as envdoctor's, and a mistyped option
    (``--confg``) is a usage error with click's "Did you mean --config?" (exit 2)."""

    allow_interspersed_args = False

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        argv = ctx.params.get("launch_argv") or ()
        if argv and argv[0].lower().endswith(_CONFIG_SUFFIXES):
            raise click.UsageError(
                f"{argv[0]!r} is not a launch command: config files are "
                f"given with --config / --accelerate-config (did you mean "
                f"--config {argv[0]}?)",
                ctx,
            )
        return rest


def apply_assume(facts: object, assume: tuple[str, ...] | list[str]) -> None:
    """``--assume NAME==VERSION``: set those packages' versions in ``facts``."""
    from envdoctor import versions
    from envdoctor.errors import InputError
    from envdoctor.facts.interface import Package, normalize_name

    for item in assume:
        name, sep, version = item.partition("==")
        name, version = name.strip(), version.strip()
        if not (sep and name and version):
            raise InputError("--assume", f"expected NAME==VERSION, got {item!r}")
        if len(version) > 64 or versions.parse(version) is None:
            raise InputError("--assume", f"{version!r} is not a version (e.g. 1.16.0)")
        facts.packages[normalize_name(name)] = Package(version=version)  # type: ignore[attr-defined]
        facts.extra.setdefault("assumed", []).append(normalize_name(name))  # type: ignore[attr-defined]


#: the packages of the training stack: judged from this environment only when it is the training one
TRAINING_STACK = ("trl", "vllm", "transformers", "torch", "accelerate", "deepspeed", "peft", "flash-attn")


def not_training_env(facts: Any, assume: tuple[str, ...] | list[str]) -> None:
    """``--assume trl==X`` where no TRL is installed: the environment envdoctor runs in is not
    the training one (a CI runner, a laptop), so its training-stack packages are not judged —
    the stack is what ``--assume`` names, the rest unknown. With TRL installed here (the
    training environment), ``--assume`` overrides only the packages it names."""
    from envdoctor.facts.interface import normalize_name

    named = {normalize_name(item.partition("==")[0].strip()) for item in assume}
    if "trl" not in named or facts.version("trl") is not None:
        return
    dropped = sorted(n for n in TRAINING_STACK if n in facts.packages and n not in named)
    for name in dropped:
        del facts.packages[name]
    if dropped:
        facts.extra["not_judged_here"] = dropped


def facts_and_plan(
    facts_file: str | None,
    assume: tuple[str, ...] | list[str],
    config: str | None,
    accelerate_config: str | None,
    launch: tuple[str, ...] | list[str],
    launch_argv: Sequence[str],
) -> tuple[Any, Any]:
    """The facts (this machine's, or the ``--facts`` snapshot's, with ``--assume`` applied) and
    the plan of ``--config`` / ``--accelerate-config`` / ``--launch`` / ``-- LAUNCH``."""
    from envdoctor.facts.collect import collect_facts
    from envdoctor.plan.build import build_plan

    if facts_file:
        from envdoctor.facts.snapshot import load  # only for a snapshot: not on the check's path

        facts = load(facts_file)
    else:
        facts = collect_facts()
        not_training_env(facts, assume)
    apply_assume(facts, assume)
    plan = build_plan(
        config=config,
        accelerate_config=accelerate_config,
        launch="\n".join(launch) or None,
        launch_argv=launch_argv,
        live=facts.live,
    )
    return facts, plan
