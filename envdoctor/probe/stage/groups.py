"""The process groups the probe starts (the trainer's launcher, a probe vLLM server): each runs
in a session of its own, so ending its group ends everything it started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    pids.append(int(entry))
            except (ProcessLookupError, PermissionError):
                continue
    return pids


def end_group(proc: subprocess.Popen, grace_s: float) -> list[int]:
    """SIGTERM the whole group, SIGKILL what is left after ``grace_s``; returns survivors."""
    pgid = proc.pid
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        if not _group_alive(pgid):
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
            if not _group_pids(pgid):
                break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1)
    return _group_pids(pgid)
