"""Work vLLM would do at start, done by the probe ahead of time in its own temp dir.

``VllmWarmer`` runs ``vllm_warm.py`` (vLLM's model-info inspection, into the probe's private
``VLLM_CACHE_ROOT``) while the weights are written and the trainer imports; ``interpreter_of``
finds the Python a console script (``trl``, ``vllm``) runs, so that the work is done by the
same vLLM that will read it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from envdoctor.probe.stage.groups import end_group

WARM_SCRIPT = Path(__file__).with_name("vllm_warm.py")
#: the longest a probe server's start waits for it, from its start (it took 20-24 s on H200
#: machines beside a starting server and trainer; vLLM's own inspection takes as long again)
WARM_WAIT_S = 45.0
#: pip's launcher for a long interpreter path: a shell line that execs the real Python
_SH_EXEC = re.compile(rb"""^'''exec' '?"?([^"'\s]+)"?'? "\$0" "\$@"$""", re.MULTILINE)


def interpreter_of(program: str) -> str | None:
    """The Python interpreter a console script runs (its ``#!`` line, or pip's ``exec`` shim
    for long paths); the program itself when it is a Python; None when it is neither."""
    path = program if "/" in program else shutil.which(program)
    if not path:
        return None
    if Path(path).name.startswith("python"):
        return path
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    first = head.split(b"\n", 1)[0][2:].strip().split()
    if not first:
        return None
    if first[0].endswith(b"/env") and len(first) > 1:
        found = shutil.which(first[1].decode(errors="replace"))
        return found if found and Path(found).name.startswith("python") else None
    if Path(first[0].decode(errors="replace")).name.startswith("python"):
        return first[0].decode(errors="replace")
    shim = _SH_EXEC.search(head)
    return shim.group(1).decode(errors="replace") if shim else None


class VllmWarmer:
    """vLLM's model-info cache filled in the background for ``architectures`` by ``python``,
    with ``env`` (the environment of the process that will start vLLM, whose cache root is the
    probe's). Its own process group, ended with the probe; ``report()`` once it is done."""

    def __init__(self, python: str, architectures: list[str], env: dict[str, str], tmp: Path) -> None:
        self.out = tmp / "vllm-warm.json"
        self.start = time.monotonic()
        with open(tmp / "vllm-warm.log", "wb") as fh:
            self.proc = subprocess.Popen(
                [python, str(WARM_SCRIPT), str(self.out), *architectures],
                env={**env, "PYTHONUNBUFFERED": "1"},
                cwd=tmp,
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.ended_at: float | None = None

    def poll(self) -> bool:
        """Whether it has ended (remembers when)."""
        if self.ended_at is None and self.proc.poll() is not None:
            self.ended_at = time.monotonic()
        return self.ended_at is not None

    def stop(self) -> None:
        end_group(self.proc, 2.0)
        self.poll()

    def report(self) -> dict[str, Any]:
        """What it did per architecture, and its seconds ({} while it runs or if it wrote nothing)."""
        try:
            data = json.loads(self.out.read_text())
        except (OSError, ValueError):
            return {"exit_code": self.proc.poll()} if self.ended_at is not None else {}
        return data if isinstance(data, dict) else {}
