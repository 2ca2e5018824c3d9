"""A program the run starts is not on the PATH of the process that starts it (TRI017).

``FileNotFoundError: [Errno 2] No such file or directory: 'ninja'`` — a bare program name, not a
path — is ``subprocess`` (or ``os.exec*``) finding no such executable on the process's ``PATH``: a
build tool that compiles kernels at run time (ninja, nvcc, a C compiler for triton or a JIT
extension), git, nvidia-smi. The program may be installed in a virtual environment whose ``bin``
is not on the ``PATH`` of a worker process (a Ray actor started with ``py_executable`` of a venv
but the driver's ``PATH``), or not installed at all. Read where the name is a known program, or
where the traceback shows ``subprocess`` starting it; a file name (``config.json``, a path) is
another failure. In a log that fits in its head the message is also read where a wrapper quotes it
("Worker failed with error '[Errno 2] …'").
"""

from __future__ import annotations

import re

from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import Draft, Log, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Traceback

RULE = "TRI017"
_ERRNO = re.compile(
    r"\[Errno 2\] No such file or directory: (?P<q>['\"])(?P<name>[A-Za-z][\w+-]{0,40})(?P=q)"
)
#: programs a GRPO run starts, and where each comes from
PROGRAMS = {
    "ninja": "pip install ninja (into the environment whose bin/ the process's PATH holds)",
    "nvcc": "the CUDA toolkit (conda install -c nvidia cuda-nvcc, or a -devel CUDA image; CUDA_HOME/bin "
    "on PATH)",
    "gcc": "a C compiler (apt-get install build-essential; triton and JIT extensions compile with it)",
    "cc": "a C compiler (apt-get install build-essential; triton and JIT extensions compile with it)",
    "g++": "a C++ compiler (apt-get install build-essential)",
    "c++": "a C++ compiler (apt-get install build-essential)",
    "clang": "a C compiler (apt-get install clang)",
    "make": "apt-get install build-essential",
    "cmake": "pip install cmake",
    "git": "apt-get install git",
    "nvidia-smi": "the NVIDIA driver's tools (on the host, mounted into the container)",
    "hipcc": "ROCm's compiler (/opt/rocm/bin on PATH)",
    "rocm-smi": "ROCm's tools (/opt/rocm/bin on PATH)",
}
_SUBPROCESS = ("subprocess.py", "os.py")


def _program(text: str, tb: Traceback | None) -> str | None:
    found = _ERRNO.search(text[:4000])
    if found is None:
        return None
    name = found.group("name")
    if name in PROGRAMS:
        return name
    started = tb is not None and any(
        f.module_path.endswith(_SUBPROCESS)
        and f.package is None
        and f.function in ("_execute_child", "execvpe")
        for t in tb.all()
        for f in t.frames
    )
    return name if started else None


def _draft(name: str, m: Match, log: Log, worker: str) -> Draft:
    where = f" ({worker})" if worker else ""
    what = (
        f"the program '{name}' is not on the PATH of the process that ran it{where}: it was started by "
        "name and no such executable was found"
    )
    source = PROGRAMS.get(name, f"install {name}")
    fix = (
        f"make '{name}' reachable where the run starts it: {source}; where it is installed in a virtual "
        "environment, put that environment's bin/ on the PATH of the process that starts it (a Ray "
        "actor's runtime_env env_vars PATH, the worker's activated venv), not only the driver's"
    )
    d = finding(RULE, [m], log, what, fix, program=name, worker=worker or None)
    f = d.finding  # the same PATH fails on every start: an error
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, f.evidence)
    return d


def missing_program(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI017 for the exception ``tb`` (module docstring), or None."""
    if (
        tb.name not in ("FileNotFoundError", "OSError", "RuntimeError", "CalledProcessError")
        or not tb.message
    ):
        return None
    name = _program(tb.message, tb)
    if name is None:
        return None
    from envdoctor.triage.missing import _worker

    return _draft(name, m, log, _worker(tb, m.context, m.text))


MAX_LINES = 20
_WARNED = re.compile(r"(?i)\bwarn(?:ing)?\b|\bignor(?:e|ed|ing)\b|\bskipp(?:ed|ing)\b|\bfalling back\b")


def from_head(head: bytes, log: Log) -> Draft | None:
    """TRI017 on a line no signature found, where a wrapper quotes the message ("Worker failed with
    error '[Errno 2] …'"): a known program only (no traceback to show ``subprocess``)."""
    from envdoctor.triage.scanner import clean, split_prefix
    from envdoctor.triage.signatures import signatures

    if not head or b"[Errno 2] No such file or directory" not in head:
        return None
    sig = next((x for x in signatures() if x.id == "unrecognized-exception"), None)
    if sig is None:
        return None
    seen = {m.line_no for ms in log.by_sig.values() for m in ms}
    lines = head.decode("utf-8", errors="replace").split("\n")
    tried = 0
    for line_no, raw in enumerate(lines, 1):
        if "[Errno 2]" not in raw or line_no in seen:
            continue
        tried += 1
        body = split_prefix(clean(raw[:4096].encode()))[0].strip()
        if _WARNED.search(body[:200]):
            continue  # logged as a warning: the run went on without it (wandb's git lookup)
        name = _program(body, None)
        if name is not None:
            m = Match(sig, line_no, body[:1000], {}, None, tuple(lines[max(0, line_no - 41) : line_no - 1]))
            worker = "a worker process" if re.search(r"(?i)\bworker\b", body) else ""
            return _draft(name, m, log, worker)
        if tried >= MAX_LINES:
            break
    return None
