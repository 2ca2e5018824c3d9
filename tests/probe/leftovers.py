"""Which processes a probe test left behind, read from /proc (Linux).

Scoped to the test: a process counts when its command line or its environment mentions the test's
own temp dir (the probe's temp dir lives under it, and the probe puts it in every process's
TMPDIR and in the worker's arguments), or when it was seen below the process the test started
and is still the same process now. Other probes on the machine, and `ps`'s 80-column lines,
change nothing: /proc/<pid>/cmdline is read whole.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    pid: int
    start: int  # start time in clock ticks since boot: a pid reused later is another process
    ppid: int
    cmdline: str


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, start time) of ``pid``, or None once it is gone or a zombie (it is not running)."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()  # the name in parentheses may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[19])


def _read(pid: int, name: str) -> str:
    try:
        return (PROC / str(pid) / name).read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def processes() -> dict[int, Proc]:
    """Every running process this user can see, but this one."""
    found = {}
    for entry in os.listdir(PROC):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        st = _stat(pid)
        if st is not None:
            found[pid] = Proc(pid, st[1], st[0], _read(pid, "cmdline"))
    return found


def descendants(root: int) -> list[Proc]:
    """The processes below ``root`` now (children, their children, ...)."""
    procs = processes()
    kids: dict[int, list[Proc]] = {}
    for p in procs.values():
        kids.setdefault(p.ppid, []).append(p)
    out, todo = [], [root]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child.pid)
    return out


def left_behind(marker: Path | str, seen: list[Proc] = ()) -> list[Proc]:
    """The processes still running that mention ``marker`` in their command line or environment,
    and those of ``seen`` (e.g. ``descendants`` taken while the probe ran) that still run."""
    mark = str(marker)
    procs = processes()
    out = {p.pid: p for p in procs.values() if mark in p.cmdline or mark in _read(p.pid, "environ")}
    for p in seen:
        now = procs.get(p.pid)
        if now is not None and now.start == p.start:
            out[p.pid] = now
    return sorted(out.values(), key=lambda p: p.pid)


def kill_all(procs: list[Proc]) -> None:
    """SIGKILL these processes (only those still the same process)."""
    for p in procs:
        st = _stat(p.pid)
        if st is not None and st[1] == p.start:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
