"""The GPUs the launch scripts of one run give their processes (``envdoctor hook``): the vLLM
servers (``trl vllm-serve``, ``vllm serve``) and training launches of one script, or of the
scripts of one folder, read together by CUDA_VISIBLE_DEVICES (on the line or exported before
it). ``shared_gpus``: two servers, or a server and a training launch, on one GPU; a server that
asks for all of its GPU's memory. Nothing is run."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from envdoctor.plan.shell_lines import EXPORT, bash_lines, is_launch, line_runs, may_launch, option_line

MAX_FOUND = 50
MAX_STARTS = 200  # servers and training launches compared pairwise


@dataclass(frozen=True)
class _Start:
    """A process a launch script starts on GPUs: a vLLM server or a training launch."""

    file: str
    line: int
    kind: str  # "server" or "trainer"
    command: str
    gpus: tuple[int, ...] | None  # CUDA_VISIBLE_DEVICES as written (None: not set or not literal)
    port: str = "8000"
    util: float = 0.9
    background: bool = False


#: a training launch that needs no vLLM server (vLLM in its own processes, or no vLLM)
_NO_SERVER = re.compile(r"(?i)colocate|--use_vllm[= ](?:false|0)\b")
_GPU_LIST = re.compile(r"^\d+(?:,\d+)*$")


def _server(run: list[str]) -> bool:
    prog = os.path.basename(run[0]) if run else ""
    if prog == "trl":
        return run[1:2] == ["vllm-serve"]
    if prog == "vllm":
        return run[1:2] == ["serve"]
    if prog.startswith("python") and "-m" in run[1:3]:
        mod = run[run.index("-m") + 1] if run.index("-m") + 1 < len(run) else ""
        return mod in ("vllm.entrypoints.openai.api_server", "trl.scripts.vllm_serve")
    return False


def _value(run: list[str], *names: str) -> str | None:
    for i, w in enumerate(run):
        for name in names:
            if w == name and i + 1 < len(run):
                return run[i + 1]
            if w.startswith(name + "="):
                return w.split("=", 1)[1]
    return None


def _intended(lines: list[tuple[int, str, str]]) -> list[tuple[int, str]]:
    """The logical lines as their author meant them: option lines that a missing ``\\`` cut
    off a launch (``split``, said by REP005) joined back to it."""
    out: list[tuple[int, str]] = []
    for number, line, _ in lines:
        if out and option_line(line) and (runs := line_runs(out[-1][1])) and is_launch(runs[-1][1]):
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
            continue
        out.append((number, line))
    return out


def _size(run: list[str]) -> int:
    """The GPUs a server line asks for: tensor × data parallel size (1 each by default)."""
    size = 1
    for names in (
        ("--tensor-parallel-size", "--tensor_parallel_size", "-tp"),
        ("--data-parallel-size", "-dp"),
    ):
        value = _value(run, *names)
        size *= int(value) if value and value.isdigit() and 0 < int(value) <= 64 else 1
    return size


def gpu_starts(text: str, shown: str) -> list[_Start]:
    """The vLLM servers and training launches of a script, with the GPUs each is given."""
    out: list[_Start] = []
    exported: str | None = None
    for number, line in _intended(bash_lines(text)):
        m = EXPORT.match(line)
        if m:
            for word in m["rest"].split():
                if word.startswith("CUDA_VISIBLE_DEVICES="):
                    exported = word.split("=", 1)[1].strip("\"'")
            continue
        if not may_launch(line):
            continue
        background = bool(re.search(r"(?<!&)&\s*(?:#.*)?$", line))
        for env, run in line_runs(line):
            if not run or not (_server(run) or is_launch(run)):
                continue
            given = next((e.split("=", 1)[1] for e in env if e.startswith("CUDA_VISIBLE_DEVICES=")), exported)
            gpus = tuple(int(g) for g in given.split(",")) if given and _GPU_LIST.match(given) else None
            if _server(run):
                util = _value(run, "--gpu-memory-utilization", "--gpu_memory_utilization") or "0.9"
                try:
                    fraction = float(util)
                except ValueError:
                    fraction = 0.9
                port = _value(run, "--port") or "8000"
                if gpus is None and given is None:  # every GPU visible: vLLM takes the first ones
                    gpus = tuple(range(_size(run)))
                out.append(
                    _Start(shown, number, "server", " ".join(run[:2]), gpus, port, fraction, background)
                )
            elif (
                os.path.basename(run[0]) in ("accelerate", "torchrun", "deepspeed")
                or run[0].startswith("python")
            ) and not _NO_SERVER.search(" ".join(run)):
                out.append(_Start(shown, number, "trainer", " ".join(run[:2]), gpus, background=background))
    return out


def shared_gpus(starts: list[_Start]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(GPUs two starts of one run share, servers that ask for all of their GPUs' memory).

    One run: the starts of one script, or of the scripts of one folder (a server script beside
    its training script). Two servers on one port are alternatives, not one run; a training
    launch shares a server's GPU only when both name their GPUs."""
    shared: list[dict[str, Any]] = []
    full = [
        {"file": s.file, "line": s.line, "command": s.command, "util": s.util}
        for s in starts
        if s.kind == "server" and s.util >= 0.99
    ]
    by_folder: dict[str, list[_Start]] = {}
    for s in [s for s in starts if s.gpus is not None][:MAX_STARTS]:  # no GPU list: nothing to share
        by_folder.setdefault(str(PurePosixPath(s.file).parent), []).append(s)
    for group in by_folder.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                if len(shared) >= MAX_FOUND:
                    break
                if a.gpus is None or b.gpus is None or not set(a.gpus) & set(b.gpus):
                    continue
                if a.kind == "trainer" and b.kind == "trainer":
                    continue  # two training launches: alternatives
                if a.kind == b.kind == "server" and a.port == b.port:
                    continue  # one port: the same server written twice, one or the other runs
                first, second = (a, b) if a.kind == "server" else (b, a)
                together = first.file == second.file and first.background and first.line < second.line
                if first.file == second.file and not together:
                    continue  # one after the other in one script: the first has ended
                shared.append(
                    {
                        "file": second.file,
                        "line": second.line,
                        "gpus": sorted(set(a.gpus) & set(b.gpus)),
                        "first": {
                            "file": first.file,
                            "line": first.line,
                            "command": first.command,
                            "kind": first.kind,
                            "util": first.util,
                            "port": first.port,
                        },
                        "second": {
                            "file": second.file,
                            "line": second.line,
                            "command": second.command,
                            "kind": second.kind,
                            "util": second.util,
                            "port": second.port,
                        },
                        "same_script": together,
                        # the training process that joins vLLM's weight-sync group (rank 0, on
                        # the first GPU it sees) on a server GPU: NCCL's duplicate-GPU refusal
                        "rank0_shared": second.kind == "trainer"
                        and (second.gpus or (-1,))[0] in (first.gpus or ()),
                    }
                )
    return shared[:MAX_FOUND], full[:MAX_FOUND]


#: a script that chooses what to start (``case "$1" in server) … ;; train) … esac``, ``if``):
#: its server and training lines are alternatives, not one sequence
_CHOICE = re.compile(r"(?m)^\s*(?:case\b|if\b|elif\b|select\b)|\(\)\s*\{")


def blocking_servers(starts: list[_Start], texts: dict[str, str]) -> list[dict[str, Any]]:
    """vLLM servers started in the foreground of a script with a training launch after them: the
    server runs until it is killed, so the script never reaches the launch. Only scripts that
    run their lines in sequence (no ``case`` / ``if`` / function, both lines unindented)."""
    out: list[dict[str, Any]] = []
    by_file: dict[str, list[_Start]] = {}
    for s in starts[:MAX_STARTS]:
        by_file.setdefault(s.file, []).append(s)
    for file, group in by_file.items():
        text = texts.get(file, "")
        if _CHOICE.search(text):
            continue
        lines = text.replace("\r\n", "\n").split("\n")
        flush = {n for n in range(1, len(lines) + 1) if not lines[n - 1][:1].isspace()}
        for server in (s for s in group if s.kind == "server" and not s.background and s.line in flush):
            later = (t for t in group if t.kind == "trainer" and t.line > server.line and t.line in flush)
            after = next(later, None)
            if after is not None and len(out) < MAX_FOUND:
                out.append(
                    {
                        "file": file,
                        "line": server.line,
                        "command": server.command,
                        "launch": after.command,
                        "launch_line": after.line,
                    }
                )
                break
    return out
