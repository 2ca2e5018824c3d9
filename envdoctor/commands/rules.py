"""``envdoctor rules`` and ``envdoctor explain ID``: the rule documentation."""

from __future__ import annotations

import click


@click.command()
@click.option("--area", help="Only rules of this area.")
def rules(area: str | None) -> None:
    """List every rule: id, severity, area and title."""
    from envdoctor.errors import InputError
    from envdoctor.rule_docs import AREAS, rule_docs

    known = sorted({d.area for d in rule_docs().values()} | set(AREAS))
    if area is not None and area not in known:
        raise InputError("--area", f"no area {area!r}; the areas are {', '.join(known)}")
    docs = [d for d in rule_docs().values() if not area or d.area == area]
    for d in sorted(docs, key=lambda d: d.id):
        click.echo(f"{d.id:<7} {d.severity.value:<8} {d.area:<10} {d.name:<34} {d.title}")


@click.command()
@click.argument("rule_id")
def explain(rule_id: str) -> None:
    """Print one rule's documentation: why it matters, the fix and its sources."""
    from envdoctor.errors import InputError
    from envdoctor.rule_docs import AREAS, rule_docs

    docs = rule_docs()
    doc = docs.get(rule_id.upper()) or next((d for d in docs.values() if d.name == rule_id), None)
    if doc is None:
        raise InputError("explain", f"no rule {rule_id!r}; `envdoctor rules` lists them")
    click.echo(f"{doc.id} {doc.name} ({doc.severity.value}, {AREAS[doc.area]})\n")
    click.echo(f"{doc.title}\n")
    click.echo(f"Why: {doc.why}\n")
    click.echo(f"Fix: {doc.fix}\n")
    from envdoctor.resources import repo_url

    click.echo("References:")
    for ref in doc.references:  # repository paths as URLs: a wheel has no docs/ folder
        click.echo(f"  - {repo_url(ref)}")
