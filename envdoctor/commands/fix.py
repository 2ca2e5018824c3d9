"""``envdoctor fix``: apply the fixes that hold, as ``ruff --fix`` does for lint.

The same inputs as ``check``. Every remedy is proved first (``envdoctor.remedy``): applied to a
copy of the inputs, the rules run again; only what holds is applied, and all of it together is
checked once more. The config file is edited in place (comments and order kept; ``--diff``
shows the change without writing); the pip line, the environment and the launch lines are
printed, since they are run, not written. Only the config file named (``--config``, or the
``--config`` of the launch line) is ever written.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any

import click

from envdoctor.commands.options import (
    LaunchCommand,
    accelerate_config_option,
    assume_option,
    config_option,
    emit,
    facts_and_plan,
    facts_option,
    ignore_option,
    launch_option,
    output_option,
    select_option,
    split_list,
    text_or_json_option,
)
from envdoctor.remedy.platform import accelerator_build, pip_lines

SCHEMA = "envdoctor.fix/1"


@click.command(cls=LaunchCommand)
@config_option
@accelerate_config_option
@facts_option(
    "Fix for a snapshot from `envdoctor collect`: `after` judges it as if the versions were installed."
)
@launch_option
@select_option
@ignore_option
@text_or_json_option
@output_option
@assume_option
@click.option("--diff", is_flag=True, help="Show the config file's change as a unified diff; write nothing.")
@click.option("--include-info", is_flag=True, help="Also apply the fixes of info findings (advice).")
@click.argument("launch_argv", nargs=-1, type=click.UNPROCESSED)
def fix(
    config,
    accelerate_config,
    facts_file,
    launch,
    select,
    ignore,
    fmt,
    output,
    assume,
    diff,
    include_info,
    launch_argv,
) -> None:
    """Apply the fixes envdoctor can prove: config keys (written), packages, environment and
    launch lines (printed).

    \b
        envdoctor fix --config grpo.yaml -- accelerate launch --num_processes 3 train.py
        envdoctor fix --diff --config grpo.yaml -- python train.py
    """
    facts, plan = facts_and_plan(facts_file, assume, config, accelerate_config, launch, launch_argv)
    result = run_fix(facts, plan, split_list(select) or None, split_list(ignore) or None, include_info)
    edits = file_edits(plan, result["closure"].changes.files, result["changes"]["config"])
    edit = edits.get(plan.config_path) if plan.config_path else None
    if not diff:
        from envdoctor.remedy.file_edit import write_file

        _refuse_unwritable(edits)
        for path, (_old, new) in edits.items():
            write_file(path, new)
    if fmt == "json":
        emit(json.dumps(result["json"], indent=2) + "\n", output)
    else:
        emit(text(result, plan.config_path, edit, diff, edits), output)
    sys.exit(result["exit"])


def named_files(plan: Any) -> list[str]:
    """The files ``fix`` may write: those the inputs name (the config file, the accelerate
    config, the training script of the trainer's line)."""
    out = [p for p in (plan.config_path, plan.accelerate_path) if p and p != "-"]
    if plan.script is not None and plan.script.path and not plan.script.problem:
        out.append(plan.script.path)
        # the repository modules it imports, read: the one that builds its GRPOConfig(...)
        out += [f for f in plan.script.files if f != plan.script.path]
    return out


def file_edits(plan: Any, files: Any, config: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each file ``fix`` changes: (its text now, its text after the fixes): the line edits of
    the remedies (``changes.files``), then the config keys into the config file."""
    from envdoctor.errors import InputError
    from envdoctor.remedy.file_edit import EditError, key, on_disk, texts_after

    named = {key(p): p for p in named_files(plan)}
    for edit in files:
        if key(edit.path) not in named:  # never proved on a file the inputs do not name
            raise InputError(edit.path, "a fix would edit it, but the inputs do not name it")
    try:
        after = texts_after(files)
    except EditError as exc:
        raise InputError(str(exc).split(":")[0], str(exc)) from None
    before = on_disk(after)
    out = {named[k]: (before[k], text) for k, text in after.items() if before.get(k) != text}
    path = plan.config_path
    if path and path != "-" and (config["set"] or config["remove"]):
        from envdoctor.plan.build import file_places
        from envdoctor.remedy.config_edit import edit_config

        old = before.get(key(path)) or on_disk([path]).get(key(path), "")
        new = edit_config(after.get(key(path), old), path, config["set"], config["remove"], file_places(plan))
        if new != old:
            out[path] = (old, new)
    return out


def run_fix(
    facts: Any, plan: Any, select: list[str] | None, ignore: list[str] | None, include_info: bool
) -> dict[str, Any]:
    """The closure over ``facts`` + ``plan``, the before / after reports and the JSON object."""
    from envdoctor.doctor import check as run_check
    from envdoctor.remedy import Rerun, close, launch_lines
    from envdoctor.report import render

    _, before = run_check(facts, plan, select=select, ignore=ignore, network=False)
    closure = close(facts, plan, Rerun(select, ignore), include_info=include_info)
    _, after = run_check(closure.facts, closure.plan, select=select, ignore=ignore, network=False)
    changes = closure.changes.to_dict()
    out = {
        "schema": SCHEMA,
        "changes": changes,
        "commands": commands(changes, accelerator_build(facts)),
        "fixed": list(dict.fromkeys(closure.fixed)),
        "unfixed": [{"rule": r, "why": w} for r, w in closure.unfixed]
        + (
            []
            if closure.one_round
            else [
                {
                    "rule": "-",
                    "why": "the fixes applied together give another result than one by one "
                    "(`after` shows theirs)",
                }
            ]
        ),
        "before": json.loads(render(before, "json")),
        "after": json.loads(render(after, "json")),
    }
    came_from = launch_from(plan, changes["launch"])
    if came_from:
        out["launch_from"] = came_from
    code = 1 if after.exit_code() else 0
    return {
        "json": out,
        "changes": changes,
        "exit": code,
        "before": before,
        "after": after,
        "closure": closure,
        "launch_was": launch_lines(plan),
    }


def launch_from(plan: Any, lines: list[str] | None) -> list[str | None] | None:
    """Where each changed launch line stands now: the shell script's file and line its command
    came from (``bash train.sh`` followed, plan/shell_follow), aligned with ``lines``; None where
    no line came from a script. fix never writes the script: the user edits that line."""
    if not lines:
        return None
    servers = [lx for lx in plan.launches if lx.is_server]
    others = [lx for lx in plan.launches if not lx.is_server]
    if not any(lx.source for lx in [*servers, *others]):
        return None
    trainer = plan.trainer
    out: list[str | None] = []
    for i, _ in enumerate(lines):
        last = i == len(lines) - 1
        lx = trainer if last else (servers[i] if i < len(servers) else None)
        out.append(f"{lx.source} (run by `{lx.via}`)" if lx is not None and lx.source else None)
    return out


def commands(changes: dict[str, Any], build: str | None = None) -> list[str]:
    """What the user runs: the pip line, the environment, the launch lines. On an accelerator other
    than CUDA (``build``) the packages PyPI builds for CUDA are named for that platform's own builds
    instead of pinned from PyPI (a shell comment: the line installs nothing)."""
    out = pip_lines(changes["packages"], build)
    out += [f"unset {k}" for k in changes["env"]["unset"]]
    out += [f"export {k}={shlex.quote(v)}" for k, v in changes["env"]["set"].items()]
    out += list(changes["launch"] or [])
    return out


def config_edit(path: str, config: dict[str, Any]) -> tuple[str, str] | None:
    """(old text, new text) of the config file, or None when nothing changes there."""
    if not (config["set"] or config["remove"]) or path == "-":
        return None
    from envdoctor.errors import read_input_text
    from envdoctor.remedy.config_edit import edit_config

    old = read_input_text(path, path, 8 * 1024 * 1024)
    new = edit_config(old, path, config["set"], config["remove"])
    return (old, new) if new != old else None


def _refuse_unwritable(edits: dict[str, Any]) -> None:
    """Every file to write checked before any is written: a link, a FIFO or a device among them
    stops the command (exit 2 naming it) with nothing written."""
    from envdoctor.errors import InputError
    from envdoctor.remedy.file_edit import unwritable

    for path in edits:
        why = unwritable(path)
        if why is not None:
            raise InputError(path, f"not written: {why}")


def _diff(path: str, edit: tuple[str, str]) -> str:
    import difflib

    return "".join(
        difflib.unified_diff(
            edit[0].splitlines(keepends=True), edit[1].splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    )


def _what(files: list[dict[str, Any]], path: str) -> str:
    """The line edits of one file, said short."""
    from envdoctor.redact import clean
    from envdoctor.remedy.file_edit import key

    said = []
    for e in files:
        if key(e["path"]) != key(path):
            continue
        if e.get("eol"):
            said.append(f"line ends to {str(e['eol']).upper()}")
        elif not e["new"]:
            said.append(f"line {e['line']} deleted" if len(e["old"]) == 1 else f"lines {e['line']}+ deleted")
        elif len(e["old"]) == 1 and len(e["new"]) == 1:  # one line: what it said, what it says
            was, now = str(e["old"][0]).strip().rstrip(","), str(e["new"][0]).strip().rstrip(",")
            said.append(f"line {e['line']} `{clean(was)}` → `{clean(now)}`")
        else:
            said.append(f"line {e['line']} edited")
    return "; ".join(said)


def _counts(report: Any) -> str:
    from envdoctor.findings import Severity

    e, w = report.count(Severity.ERROR), report.count(Severity.WARNING)
    return f"{e} error{'s' * (e != 1)}, {w} warning{'s' * (w != 1)}"


def text(
    result: dict[str, Any],
    path: str | None,
    edit: tuple[str, str] | None,
    diff: bool,
    edits: dict[str, tuple[str, str]] | None = None,
) -> str:
    """The text report: what changed, what to run, what is left, before → after."""
    from envdoctor.redact import clean

    js, changes = result["json"], result["changes"]
    lines = [f"envdoctor fix — {result['before'].subject}", ""]
    if not js["fixed"]:
        lines.append("Nothing to fix." if not js["unfixed"] else "No fix envdoctor could prove.")
    else:
        lines.append(f"Fixed: {', '.join(js['fixed'])}")
    cfg = changes["config"]
    if cfg["set"] or cfg["remove"]:
        what = [f"set {k}: {json.dumps(v)}" for k, v in cfg["set"].items()] + [
            f"remove {k}" for k in cfg["remove"]
        ]
        if path and edit is not None:
            verb = "would change (--diff; nothing written)" if diff else "changed"
            lines.append(f"  config {path} {verb}: {'; '.join(what)}")
        else:
            lines.append(f"  in your GRPO config (no config file to edit): {'; '.join(what)}")
    cfg_said = bool(cfg["set"] or cfg["remove"])
    for other in [p for p in edits or {} if p != path or not cfg_said]:
        verb = "would change (--diff; nothing written)" if diff else "changed"
        lines.append(f"  {other} {verb}: " + _what(js["changes"].get("files") or [], other))
    if js["commands"]:
        lines.append("  run:")
        was = set(result.get("launch_was") or ())
        launch = changes["launch"] or []
        came_from = js.get("launch_from") or [None] * len(launch)
        for c in js["commands"]:
            if c in launch:
                where = None if c in was else came_from[launch.index(c)]
                c += (
                    "  # as it was"
                    if c in was
                    else ("  # the trainer" if c == launch[-1] else "  # the server")
                )
                if where:
                    c += f", in place of {where}: edit that line of the script (not written)"
            lines.append(f"    {c}")
    if diff:
        shown = dict(edits or {})
        if edit is not None and path:
            shown[path] = edit
        for p, e in shown.items():  # the config file's line edits and keys in one diff
            lines += ["", _diff(p, e).rstrip("\n")]
    for item in js["unfixed"]:
        lines.append(f"  not fixed: {item['rule']} — {item['why']}")
    lines += ["", f"before → after: {_counts(result['before'])} → {_counts(result['after'])}"]
    known = tuple(getattr(result["before"], "secrets", ()))  # the plan's: a folded YAML value's own line
    return "\n".join(clean(line, known, newlines=False) for line in "\n".join(lines).split("\n")) + "\n"
