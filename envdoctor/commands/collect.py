"""``envdoctor collect``: write this machine's facts as a JSON snapshot."""

from __future__ import annotations

import click

from envdoctor.commands.options import emit


@click.command()
@click.option("-o", "--output", type=str, metavar="FILE", help="Write here (default: stdout).")
@click.option("--no-gpu", is_flag=True, help="Skip NVML.")
def collect(output: str | None, no_gpu: bool) -> None:
    """Collect facts (packages, GPUs, environment) into a snapshot for `check --facts`."""
    from envdoctor.facts.collect import collect_facts
    from envdoctor.facts.snapshot import dumps

    emit(dumps(collect_facts(gpus=not no_gpu)), output)
