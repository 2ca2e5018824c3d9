"""Commands that start another command: what each node finally runs, and how many copies.

Sources for the semantics: srun(1) ("the default is one task per node"), Open MPI's mpirun(1)
(``-np``, ``-N`` / ``--npernode``, ``-x``), bash(1) (``-c``), env(1), nohup(1), timeout(1).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# wrapper -> (flags that take a value, positional arguments before the command)
_SIMPLE: dict[str, tuple[frozenset[str], int]] = {
    "nohup": (frozenset(), 0),
    "exec": (frozenset({"a"}), 0),
    "time": (frozenset({"f", "o", "format", "output"}), 0),
    "nice": (frozenset({"n", "adjustment"}), 0),
    "setsid": (frozenset(), 0),
    "stdbuf": (frozenset({"i", "o", "e", "input", "output", "error"}), 0),
    "timeout": (frozenset({"s", "signal", "k", "kill-after"}), 1),
    "numactl": (
        frozenset(
            {"N", "m", "C", "p", "i", "cpunodebind", "membind", "physcpubind", "preferred", "interleave"}
        ),
        0,
    ),
    "env": (frozenset({"u", "unset", "C", "chdir"}), 0),
}
# `<tool> run [options] command`: environment managers
_RUNNERS: dict[str, frozenset[str]] = {
    "uv": frozenset(
        {
            "with",
            "python",
            "p",
            "project",
            "directory",
            "package",
            "extra",
            "env-file",
            "group",
            "only-group",
            "no-group",
            "index",
            "index-url",
            "extra-index-url",
            "with-requirements",
            "with-editable",
        }
    ),
    "conda": frozenset({"n", "name", "p", "prefix", "cwd"}),
    "mamba": frozenset({"n", "name", "p", "prefix", "cwd"}),
    "micromamba": frozenset({"n", "name", "p", "prefix", "cwd"}),
    "poetry": frozenset({"C", "directory", "P", "project"}),
    "pipenv": frozenset(),
    "pixi": frozenset({"e", "environment", "manifest-path"}),
}
#: a runner's option that runs a module with the environment's python (``uv run -m pkg.train``,
#: ``uv run --module pkg.train``: uv's ``run --module``), as ``python -m pkg.train`` does
_RUN_MODULE: dict[str, frozenset[str]] = {"uv": frozenset({"m", "module"})}
#: Hugging Face Jobs: `hf jobs run [options] IMAGE command` (and its older spellings) runs the
#: command in a container of the image (hfjobs / huggingface_hub's `run` options)
_JOBS: dict[str, list[str]] = {"hf": ["jobs", "run"], "huggingface-cli": ["jobs", "run"], "hfjobs": ["run"]}
_JOB_VALUE = frozenset(
    {
        "e",
        "env",
        "s",
        "secret",
        "secrets",
        "env-file",
        "secret-env-file",
        "secrets-file",
        "flavor",
        "timeout",
        "token",
        "namespace",
        "l",
        "label",
    }
)
#: containers: `docker run [options] IMAGE command` (and `exec … CONTAINER command`; podman's
#: and nvidia-docker's alike) runs the command in the container: docker-run(1)'s options that
#: take a value (the rest, --rm, -i, -t, -d, --privileged, --init, take none)
_CONTAINERS = frozenset({"docker", "podman", "nvidia-docker"})
_CONTAINER_VALUE = frozenset(
    {
        *"acehlmpuvw",
        *("add-host", "annotation", "attach", "blkio-weight", "cap-add", "cap-drop", "cgroup-parent"),
        *("cgroupns", "cidfile", "cpu-period", "cpu-quota", "cpu-shares", "cpus", "cpuset-cpus"),
        *("cpuset-mems", "detach-keys", "device", "device-cgroup-rule", "dns", "dns-option"),
        *("dns-search", "domainname", "entrypoint", "env", "env-file", "expose", "gpus", "group-add"),
        *("health-cmd", "health-interval", "health-retries", "health-start-period", "health-timeout"),
        *("hostname", "ip", "ip6", "ipc", "isolation", "label", "label-file", "link", "log-driver"),
        *("log-opt", "mac-address", "memory", "memory-reservation", "memory-swap", "mount", "name"),
        *("network", "net", "network-alias", "oom-score-adj", "pid", "pids-limit", "platform"),
        *("publish", "pull", "restart", "runtime", "security-opt", "shm-size", "stop-signal"),
        *("stop-timeout", "storage-opt", "sysctl", "tmpfs", "ulimit", "user", "userns", "uts"),
        *("volume", "volumes-from", "workdir"),
    }
)
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
# srun options that take no value (or only an optional one, which must be given with `=`)
_SRUN_BOOL = frozenset(
    {
        "exclusive",
        "overlap",
        "label",
        "unbuffered",
        "kill-on-bad-exit",
        "quiet",
        "verbose",
        "no-kill",
        "pty",
        "overcommit",
        "contiguous",
        "spread-job",
        "disable-status",
        "exact",
        "whole",
        "test-only",
        "hold",
        "immediate",
        "no-allocate",
        "multi-prog",
        "help",
        "usage",
        "version",
        "nice",
        "propagate",
        "x11",
        "send-libs",
        "oversubscribe",
        "container-remap-root",
        "no-container-remap-root",
        "container-mount-home",
        "no-container-mount-home",
        "container-writable",
        "container-readonly",
        "no-container-entrypoint",
        "container-entrypoint",
        "container-save",
    }
)
_SRUN_SHORT_BOOL = frozenset("lukQvXOsZEHhVkI")
_MPI_VALUE = frozenset(
    {
        "np",
        "n",
        "c",
        "N",
        "npernode",
        "ppn",
        "H",
        "host",
        "hosts",
        "hostfile",
        "machinefile",
        "f",
        "x",
        "map-by",
        "rank-by",
        "bind-to",
        "wdir",
        "wd",
        "prefix",
        "output-filename",
        "rankfile",
        "tag",
    }
)
_MPI_PAIR = frozenset({"mca", "gmca", "genv", "env"})  # two values: NAME VALUE


@dataclass
class Peeled:
    """A command with its wrappers taken off."""

    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    wrappers: list[str] = field(default_factory=list)
    inner: str | None = None  # bash -c TEXT
    script: list[str] | None = None  # bash [flags] SCRIPT ARGS…: the script and its arguments
    unresolved: str | None = None
    nodes: int | None = None
    task_wrapper: str | None = None  # srun / mpirun: starts copies of the command
    tasks: int | None = None  # copies in all (None: unknown)
    tasks_per_node: int | None = None  # (None: unknown)

    @property
    def tasks_text(self) -> str:
        if self.tasks is None:
            return "several copies"
        where = (
            f" ({self.tasks_per_node} per node on {self.nodes} nodes)"
            if self.nodes and self.tasks_per_node
            else ""
        )
        return f"{self.tasks} cop{'y' if self.tasks == 1 else 'ies'}{where}"


#: an interpreter held in a shell variable: ``"$PY" train.py``, ``$PYTHON_BIN -u train.py``,
#: ``${PYTHON:-python3} train.py`` (the variable's name says python, or its default is a python)
_PYTHON_VARIABLE = re.compile(
    r"\$\{?(?:PY|PYTHON)(?:_?[A-Z0-9]{1,12})?\}?|\$\{(?:PY|PYTHON)(?:_?[A-Z0-9]{1,12})?:?-[^}]*\}"
    r"|\$\{[A-Za-z_]\w{0,40}:?-(?:[^}\s]*/)?python[0-9.]*\}"
)


def _python_variable(toks: list[str]) -> bool:
    """Whether ``toks`` run a ``.py`` script (or ``-m`` module) with an interpreter held in a
    shell variable (a variable of another name, ``$LAUNCHER train.py``, may hold a launcher: not
    this)."""
    if not _PYTHON_VARIABLE.fullmatch(toks[0]):
        return False
    if "-m" in toks[1:3]:
        return True  # `$PY -m pkg.train`, `$PY -u -m pkg.train`
    rest = [t for t in toks[1:] if not t.startswith("-")]
    return bool(rest) and rest[0].endswith(".py")


def _count(value: str | None) -> int | None:
    if value is None or not re.fullmatch(r"\d{1,6}", value.strip()):
        return None
    return int(value)


def _options(
    tokens: list[str],
    value_flags: frozenset[str],
    bool_long: frozenset[str] = frozenset(),
    short_bool: frozenset[str] | None = None,
    pairs: frozenset[str] = frozenset(),
) -> tuple[dict[str, list[str]], int]:
    """Options before the command: ({name: [values]}, index of the command). Long options take
    a value when listed in ``value_flags`` (or when not in ``bool_long``, if that is given)."""
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "--":
            return found, i + 1
        if not tok.startswith("-") or tok == "-":
            break
        i += 1
        if tok.startswith("--") or tok[1:] in value_flags | pairs:  # -np 4 is a long option
            name, eq, val = tok.lstrip("-").partition("=")
            if eq:
                found.setdefault(name, []).append(val)
                continue
            takes = (name not in bool_long) if bool_long else name in value_flags
            if name in pairs:
                found.setdefault(name, []).append(" ".join(tokens[i : i + 2]))
                i += 2
            elif takes and i < len(tokens):
                found.setdefault(name, []).append(tokens[i])
                i += 1
            else:
                found.setdefault(name, [])
            continue
        name = tok[1:2]
        takes = (name not in short_bool) if short_bool is not None else name in value_flags
        if not takes:
            found.setdefault(name, [])
        elif len(tok) > 2:
            found.setdefault(name, []).append(tok[2:].lstrip("="))
        elif i < len(tokens):
            found.setdefault(name, []).append(tokens[i])
            i += 1
    return found, i


def _first(found: dict[str, list[str]], *names: str) -> str | None:
    for name in names:
        if found.get(name):
            return found[name][-1]
    return None


def _describe(tokens: list[str]) -> str:
    text = shlex.join(tokens)
    return text if len(text) <= 100 else text[:97] + "…"


def _srun(tokens: list[str], p: Peeled) -> int:
    found, i = _options(tokens, frozenset(), bool_long=_SRUN_BOOL, short_bool=_SRUN_SHORT_BOOL)
    nodes_raw = _first(found, "nodes", "N")
    tasks_raw = _first(found, "ntasks", "n")
    per_raw = _first(found, "ntasks-per-node")
    if nodes_raw is None and tasks_raw is None and per_raw is None:
        # inside an allocation srun takes the counts sbatch exported (srun(1), INPUT
        # ENVIRONMENT VARIABLES; plan/launchers/slurm.py sets them from #SBATCH lines)
        nodes_raw, tasks_raw = p.env.get("SLURM_NNODES"), p.env.get("SLURM_NTASKS")
        per_raw = p.env.get("SLURM_NTASKS_PER_NODE")
    nodes = _count((nodes_raw or "").split("-")[-1]) if nodes_raw else None
    tasks = _count(tasks_raw)
    per_node = _count(per_raw)
    if per_node is None:
        if tasks_raw is None:
            per_node = 1  # srun(1): the default is one task per node
        elif nodes_raw is not None and nodes_raw == tasks_raw:
            per_node = 1
        elif tasks is not None and nodes and tasks % nodes == 0:
            per_node = tasks // nodes
        elif tasks == 1:
            per_node, nodes = 1, 1
    if tasks is None and nodes is not None and per_node is not None:
        tasks = nodes * per_node
    for item in found.get("export", []):
        for part in item.split(","):
            if _ASSIGN.match(part):
                key, _, value = part.partition("=")
                p.env[key] = value
    _tasks(p, "srun", tasks, per_node, nodes)
    return i


def _mpirun(prog: str, tokens: list[str], p: Peeled) -> int:
    found, i = _options(tokens, _MPI_VALUE, pairs=_MPI_PAIR)
    tasks = _count(_first(found, "np", "n", "c"))
    per_node = _count(_first(found, "N", "npernode", "ppn"))
    ppr = re.fullmatch(r"ppr:(\d+):node\b.*", _first(found, "map-by") or "")
    if per_node is None and ppr:
        per_node = int(ppr.group(1))
    hosts = _first(found, "H", "host", "hosts")
    nodes = len({h.split(":")[0] for h in hosts.split(",") if h}) if hosts else None
    if tasks == 1:
        per_node, nodes = 1, 1
    elif per_node is None and nodes == 1 and tasks is not None:
        per_node = tasks
    if nodes is None and tasks is not None and per_node:
        nodes = -(-tasks // per_node)
    for item in found.get("x", []):
        if _ASSIGN.match(item):
            key, _, value = item.partition("=")
            p.env[key] = value
    for pair in found.get("genv", []) + found.get("env", []):
        key, _, value = pair.partition(" ")
        if re.fullmatch(r"[A-Za-z_]\w*", key):
            p.env[key] = value
    _tasks(p, prog, tasks, per_node, nodes)
    return i


def _tasks(p: Peeled, wrapper: str, tasks: int | None, per_node: int | None, nodes: int | None) -> None:
    if p.task_wrapper is not None:  # srun inside mpirun: copies of copies
        p.unresolved = f"{wrapper} inside {p.task_wrapper}"
        return
    p.task_wrapper, p.tasks, p.tasks_per_node, p.nodes = wrapper, tasks, per_node, nodes


def _shell(prog: str, tokens: list[str], p: Peeled) -> None:
    """``bash [-lex] -c TEXT``: the text runs; ``bash script.sh``: cannot be seen into."""
    i, has_c = 0, False
    while i < len(tokens) and tokens[i][:1] in "-+" and len(tokens[i]) > 1:
        tok = tokens[i]
        i += 1
        if tok in ("-o", "+o", "-O", "+O"):
            i += 1
        elif not tok.startswith("--") and "c" in tok[1:]:
            has_c = True
    if has_c and i < len(tokens):
        p.inner = tokens[i]
        return
    what = f"`{shlex.join([prog, *tokens[i : i + 1]])}`"
    if i < len(tokens):
        p.script = tokens[i:]
    p.unresolved = (
        f"{what} runs a shell script envdoctor cannot see into"
        if i < len(tokens)
        else f"{what} reads its commands from stdin"
    )


def _run_options(prog: str, args: list[str]) -> tuple[str | None, int]:
    """``<tool> run``'s options: (the module its ``-m`` / ``--module`` runs, or None; the index
    of the command). uv reads no option of its own after the module's name: the rest is the
    module's command line."""
    flags = _RUN_MODULE.get(prog, frozenset())
    cut = next(
        (j for j, t in enumerate(args) if t.lstrip("-").partition("=")[0] in flags and t.startswith("-")),
        len(args),
    )
    _, i = _options(args[:cut], _RUNNERS[prog])
    if i != cut or cut == len(args):
        return None, i  # no module option among the runner's own
    _, eq, value = args[cut].lstrip("-").partition("=")
    if eq:
        return value, cut + 1
    return (args[cut + 1], cut + 2) if cut + 1 < len(args) else (None, cut + 1)


def peel(tokens: list[str], env: dict[str, str]) -> Peeled:
    """Take wrappers and ``VAR=value`` prefixes off ``tokens``."""
    p = Peeled(env=dict(env))
    toks = list(tokens)
    while toks:
        while toks and _ASSIGN.match(toks[0]):
            key, _, value = toks.pop(0).partition("=")
            p.env[key] = value
        if not toks:
            break
        prog = os.path.basename(toks[0])
        rest = toks[1:]
        module = None
        if prog in _SIMPLE:
            flags, positional = _SIMPLE[prog]
            _, i = _options(rest, flags)
            i += positional
        elif prog in _RUNNERS and rest[:1] == ["run"]:
            module, i = _run_options(prog, rest[1:])
            i += 1
        elif prog in _JOBS and rest[: len(_JOBS[prog])] == _JOBS[prog]:
            sub = len(_JOBS[prog])
            found, i = _options(rest[sub:], _JOB_VALUE)
            for item in found.get("e", []) + found.get("env", []):
                if _ASSIGN.match(item):
                    key, _, value = item.partition("=")
                    p.env[key] = value
            i += sub + 1  # the image
        elif prog in _CONTAINERS and rest[:1] in (["run"], ["exec"]):
            found, i = _options(rest[1:], _CONTAINER_VALUE)
            for item in found.get("e", []) + found.get("env", []):
                if _ASSIGN.match(item):
                    key, _, value = item.partition("=")
                    p.env[key] = value
            i += 2  # the subcommand and the image (or container)
            entry = _first(found, "entrypoint")
            if entry:  # the command line is the entrypoint's arguments
                rest = rest[:i] + entry.split() + rest[i:]
        elif prog == "srun":
            i = _srun(rest, p)
        elif prog in ("mpirun", "mpiexec", "orterun"):
            i = _mpirun(prog, rest, p)
        elif prog in _SHELLS:
            _shell(prog, rest, p)
            p.wrappers.append(_describe([prog, "-c"] if p.inner is not None else toks[:2]))
            p.command = [] if p.inner is not None else toks
            return p
        else:
            break
        p.wrappers.append(_describe(toks[: i + 1]))
        toks = rest[i:]
        if module:  # `uv run -m pkg.train`: the environment's python runs the module
            toks = ["python", "-m", module, *toks]
        if p.unresolved:
            break
    if toks and _python_variable(toks):
        toks = ["python", *toks[1:]]  # the interpreter a script keeps in a variable runs a .py file
    if toks and toks[0].startswith("$") and not p.unresolved:
        p.unresolved = f"`{toks[0]}` is a shell variable envdoctor does not expand"
    p.command = toks
    return p
