"""What the repository's launch scripts and configs name that will not be there at launch, and
GPU restrictions its shell scripts set unexported (``envdoctor hook``): what
``envdoctor.plan.repo_paths`` found, one finding each, at its file and line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.checks.shell_remedy import (
    background_server,
    continue_lines,
    export_line,
    lf_ends,
    lower_memory,
    machine_paths_held,
    no_commas,
    point_at,
)

_SEVERITY = {"certain": "error", "likely": "warning", "unknown": "info"}
_NOT_HELD = "the file is not in the repository: which one was meant only the author knows"
_NO_DS = "the DeepSpeed config is not in the repository: its settings only the author knows"


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
            remedy=point_at(ctx, seen),
            **({} if seen.get("near") else {"manual": _NOT_HELD}),
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
            remedy=point_at(ctx, seen),
            **({} if seen.get("near") else {"manual": _NO_DS}),
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
            remedy=export_line(ctx, seen["file"], [seen["line"]], "CUDA_VISIBLE_DEVICES"),
            file=seen["file"],
            line=seen["line"],
        )


def _shell(ctx: Context, kind: str) -> list[dict[str, Any]]:
    return list((ctx.facts.extra.get("repo_paths") or {}).get(kind) or [])


@rule("REP004")
def launch_script_crlf(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "crlf"):
        name = seen["file"]
        yield hit(
            f"{name} has Windows (CRLF) line ends ({seen['lines']} lines end in \\r) and runs a "
            f"launch (line {seen['launch_line']}): bash keeps the \\r in each line's last word "
            "(`$'\\r': command not found`, an option value or path ending in \\r) and a `\\` "
            "before it no longer continues the command",
            fix=(
                f"Convert it to LF line ends: `dos2unix {name}` (or `sed -i 's/\\r$//' {name}`), "
                "and keep it so with a .gitattributes line `*.sh text eol=lf`."
            ),
            remedy=lf_ends(ctx, name),
            file=name,
            line=seen["line"],
        )


@rule("REP005")
def launch_command_split(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "split"):
        name, line, nxt = seen["file"], seen["line"], seen["next_line"]
        how = (
            "ends in `\\` followed by a space or comment (the `\\` escapes the space, not the newline)"
            if seen.get("escaped_space")
            else "ends at a commented-out line (a `\\` inside a comment does not continue the command)"
            if seen.get("comment_cut")
            else "does not end in `\\`"
        )
        who = "a user who copies this block runs" if seen.get("readme") else "bash runs"
        yield hit(
            f"{name} line {line}: `{seen['command']} …` {how}, so {who} it without the options "
            f"that follow and then line {nxt} (`{seen['next']}`) as a command of its own "
            "(`command not found`)",
            fix=f"In {name}, end line {line} and each option line before the last with ` \\` "
            "(nothing after the backslash).",
            remedy=continue_lines(ctx, seen),
            severity="warning" if seen.get("readme") else "error",
            file=name,
            line=line,
        )


@rule("REP006")
def environment_not_exported(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "unexported_env"):
        names = seen["names"]
        listed = ", ".join(f"{n}={v['value']} (line {v['line']})" for n, v in names.items())
        exports = "; ".join(f"export {n}={v['value']}" for n, v in names.items())
        one = len(names) == 1
        yield hit(
            f"{seen['file']} sets {listed} on {'a line of its own' if one else 'lines of their own'} "
            f"without export: {'a shell variable' if one else 'shell variables'} only, so "
            f"`{seen['command']}` (line {seen['command_line']}) and the processes it starts do not "
            f"see {'it' if one else 'them'}",
            fix=f"In {seen['file']}: write `{exports}` (or put the "
            f"{'assignment' if one else 'assignments'} at the start of line {seen['command_line']}).",
            remedy=export_line(ctx, seen["file"], [v["line"] for v in names.values()], *names),
            file=seen["file"],
            line=seen["line"],
        )


@rule("REP007")
def list_option_commas(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "lora_comma"):
        values = " ".join(seen["values"])
        clean = " ".join(v.rstrip(",") for v in seen["values"])
        yield hit(
            f"{seen['file']} line {seen['line']}: `{seen['option']} {values}` gives the modules "
            f"{', '.join(repr(v) for v in seen['values'])}: the shell keeps each comma in its word, "
            f"so {', '.join(repr(v) for v in seen['bad'])} "
            f"{'names' if len(seen['bad']) == 1 else 'name'} no module and LoRA lands on fewer "
            "layers than meant",
            fix=f"In {seen['file']} line {seen['line']}, write `{seen['option']} {clean}` "
            "(space-separated, no commas).",
            remedy=no_commas(ctx, seen),
            file=seen["file"],
            line=seen["line"],
        )


@rule("REP008")
def launch_variable_unset(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "unset"):
        what = "the script path" if seen["option"] == "(the script)" else f"`{seen['option']}`"
        yield hit(
            f"{seen['file']} line {seen['line']}: {what} `{seen['word']}` of `{seen['command']} …` "
            f"uses ${seen['name']}, which the script never sets and no other file of the "
            "repository names: unless the caller exports it, the argument is empty or cut",
            fix=f"In {seen['file']}, set `{seen['name']}=…` before line {seen['line']} (or "
            "document that the caller must export it).",
            manual=f"the value of ${seen['name']} (the user's path or name) is not in the repository",
            file=seen["file"],
            line=seen["line"],
        )


_NO_COPY = "the repository holds no copy of these files: where the user keeps them is theirs to say"


@rule("REP009")
def machine_path(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "machine_paths"):
        files = seen["files"]
        where = ", ".join(files[:3]) + (f" and {len(files) - 3} more files" if len(files) > 3 else "")
        shown = "; ".join(f"{u['file']} line {u['line']} {u['key']}: `{u['path']}`" for u in seen["uses"][:3])
        held = [u for u in seen["uses"] if u.get("held")]
        fix = (
            "Set each to your copy (a model or dataset by its Hub id, e.g. `org/name`, or a path "
            "relative to the repository), or read it from a variable the user sets."
        )
        if held:
            fix = (
                "Point "
                + ", ".join(f"`{u['path']}` at the repository's own `{u['held']}`" for u in held[:3])
                + " (a path relative to the folder the launch runs in); set any other to your copy."
            )
        if seen["count"] == 1:
            u = seen["uses"][0]
            said = f"{u['file']} line {u['line']} names `{u['path']}` ({u['key']}), a path of the author's"
            said += " machine"
        else:
            said = (
                f"{where} name {seen['count']} paths under `{seen['prefix']}`, a folder of the "
                f"author's machine ({shown})"
            )
        yield hit(
            f"{said}; no download, copy or Dockerfile of the repository makes it: a run on "
            "another machine does not find it",
            fix=fix,
            remedy=machine_paths_held(ctx, seen),
            **({} if held and len(held) == seen["count"] else {"manual": _NO_COPY}),
            file=seen["file"],
            line=seen["line"],
        )


@rule("REP010")
def launches_share_gpu(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "shared_gpus"):
        a, b = seen["first"], seen["second"]
        gpus = ",".join(map(str, seen["gpus"]))
        if b["kind"] == "server":
            total = a["util"] + b["util"]
            what = (
                f"two vLLM servers (ports {a['port']} and {b['port']}) each reserve their share of "
                f"GPU {gpus}: {a['util']:g} + {b['util']:g} = {total:.2f} of its memory"
                + (", more than it has: the second refuses to start" if total > 1 else ", little left")
            )
        elif seen.get("rank0_shared"):
            what = (
                "the first training process, which joins the server's weight-sync group, is on a "
                "GPU of the server: NCCL refuses two ranks on one device ('Duplicate GPU detected', "
                f"huggingface/trl#3706), and the server already reserves {a['util']:g} of its memory"
            )
        else:
            what = (
                f"the training processes start on GPU {gpus}, where the vLLM server already reserves "
                f"{a['util']:g} of the memory: training runs out of memory there"
            )
        total_over = b["kind"] == "server" and a["util"] + b["util"] > 1
        how = (
            "in the same script, the first started in the background"
            if seen["same_script"]
            else ("in scripts of one folder, run together")
        )
        yield hit(
            f"`{a['command']}` ({a['file']} line {a['line']}) and `{b['command']}` ({b['file']} line "
            f"{b['line']}), {how}, both get CUDA_VISIBLE_DEVICES with GPU {gpus}: {what}",
            fix=(
                f"Give them disjoint GPUs: change CUDA_VISIBLE_DEVICES on {b['file']} line {b['line']} "
                "to GPUs the other does not use (and match the process count or the server's "
                "tensor × data parallel size to them)."
            ),
            severity="error" if seen["same_script"] and (seen.get("rank0_shared") or total_over) else None,
            manual="which GPUs the machine has free for each launch is not in the repository",
            file=b["file"],
            line=b["line"],
        )


@rule("REP011")
def server_memory_full(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "full_memory"):
        yield hit(
            f"{seen['file']} line {seen['line']}: `{seen['command']}` with --gpu-memory-utilization "
            f"{seen['util']:g} asks vLLM for all of the GPU's memory: the CUDA context and other "
            "allocations already hold part of it, so the engine refuses to start (vLLM V1: free "
            "memory less than desired) or runs out of memory under load",
            fix=f"In {seen['file']} line {seen['line']}, lower --gpu-memory-utilization "
            "(0.9 is vLLM's default).",
            remedy=lower_memory(ctx, seen),
            file=seen["file"],
            line=seen["line"],
        )


@rule("REP012")
def server_blocks_launch(ctx: Context) -> Iterator[Hit]:
    for seen in _shell(ctx, "blocking_server"):
        yield hit(
            f"{seen['file']} line {seen['line']} starts `{seen['command']}` in the foreground: a vLLM "
            f"server runs until it is stopped, so the script never reaches `{seen['launch']}` on "
            f"line {seen['launch_line']}",
            fix=(
                f"Start the server in the background (end line {seen['line']} with `&`, wait for its "
                "/health before the launch), or run it in a terminal of its own."
            ),
            remedy=background_server(ctx, seen),
            file=seen["file"],
            line=seen["line"],
        )
