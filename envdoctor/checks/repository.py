"""What the repository's launch scripts and configs name that will not be there at launch, and
GPU restrictions its shell scripts set unexported (``envdoctor hook``): what
``envdoctor.plan.repo_paths`` found, one finding each, at its file and line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule

_SEVERITY = {"certain": "error", "likely": "warning", "unknown": "info"}


def _missing(ctx: Context, deepspeed: bool) -> Iterator[dict[str, Any]]:
    for seen in (ctx.facts.extra.get("repo_paths") or {}).get("missing") or []:
        if (seen.get("kind") == "deepspeed config") == deepspeed:
            yield seen


def _said(seen: dict[str, Any]) -> tuple[str, str]:
    """(the message's tail, the fix's pointer) of one missing path."""
    why = f" ({seen['why']})" if seen.get("why") else ""
    near = seen.get("near") or ""
    point = f"point it at `{near}` (a file of that name the repository holds)" if near else "commit it"
    return why, point


@rule("REP001")
def launch_path_missing(ctx: Context) -> Iterator[Hit]:
    for seen in _missing(ctx, deepspeed=False):
        why, point = _said(seen)
        option = "" if seen["option"] == "(the script)" else f" ({seen['option']})"
        yield hit(
            f"{seen['file']} line {seen['line']} launches with the {seen['kind']} "
            f"`{seen['written']}`{option}, which is not in the repository from any folder the "
            f"script runs in{why}: the launch fails at start",
            fix=f"In {seen['file']} line {seen['line']}, {point}.",
            severity=_SEVERITY.get(seen.get("certainty", ""), "info"),
            file=seen["file"],
            line=seen["line"],
            path=seen["written"],
        )


@rule("REP002")
def deepspeed_config_missing(ctx: Context) -> Iterator[Hit]:
    for seen in _missing(ctx, deepspeed=True):
        why, point = _said(seen)
        yield hit(
            f"`{seen['option']}` in {seen['file']} (line {seen['line']}) names the DeepSpeed config "
            f"`{seen['written']}`, which is not in the repository{why}: the launch stops before "
            "training when it opens it",
            fix=f"In {seen['file']} line {seen['line']}, {point}.",
            severity=_SEVERITY.get(seen.get("certainty", ""), "info"),
            file=seen["file"],
            line=seen["line"],
            path=seen["written"],
        )


@rule("REP003")
def visible_devices_not_exported(ctx: Context) -> Iterator[Hit]:
    for seen in (ctx.facts.extra.get("repo_paths") or {}).get("unexported") or []:
        value = seen["value"]
        yield hit(
            f"{seen['file']} line {seen['line']} sets CUDA_VISIBLE_DEVICES={value} on a line of its "
            f"own without export: a shell variable only, so `{seen['command']}` (line "
            f"{seen['command_line']}) does not see it and gets every GPU of the machine",
            fix=(
                f"In {seen['file']}: write `export CUDA_VISIBLE_DEVICES={value}` on line {seen['line']}, "
                f"or start line {seen['command_line']} with `CUDA_VISIBLE_DEVICES={value} `; then "
                "match the launch's process count to the GPUs it leaves."
            ),
            file=seen["file"],
            line=seen["line"],
        )
