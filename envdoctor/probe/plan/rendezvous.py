"""Where the probe's ranks meet: loopback on this one node, whatever the launch line names.

A one-node probe rewrites the launcher's rendezvous to 127.0.0.1 (torchrun's ``--master_addr``
and ``--rdzv_endpoint``, accelerate's ``--main_process_ip``, deepspeed's ``--master_addr``, and
``MASTER_ADDR`` / ``PET_*`` in its environment), keeping the user's port or taking a free
loopback one. A multi-node line is not launched at all: the probe says at once what its
rendezvous would dial (it would wait for nodes that never come).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from envdoctor.net_policy import LOOPBACK, free_loopback_port

if TYPE_CHECKING:
    from envdoctor.plan.interface import Launch

#: flags that name the rendezvous host, per launcher (with their dashed spellings)
_ADDR = {
    "torchrun": ("master_addr", "rdzv_endpoint", "local_addr"),
    "accelerate": ("main_process_ip",),
    "deepspeed": ("master_addr",),
}
_PORT = {"torchrun": "master_port", "accelerate": "main_process_port", "deepspeed": "master_port"}
#: torchrun reads its options from PET_<NAME> too; these would name a remote rendezvous
_ENV_ADDR = ("PET_MASTER_ADDR", "PET_RDZV_ENDPOINT", "PET_LOCAL_ADDR")


def launcher_kind(argv: list[str]) -> tuple[str | None, int]:
    """``(torchrun | accelerate | deepspeed | None, index where its options start)``."""
    name = os.path.basename(argv[0]) if argv else ""
    if name == "torchrun":
        return "torchrun", 1
    if argv[1:3] == ["-m", "torch.distributed.run"]:
        return "torchrun", 3
    if name == "accelerate" and argv[1:2] == ["launch"]:
        return "accelerate", 2
    if name == "deepspeed":
        return "deepspeed", 1
    return None, 0


def _names(key: str) -> tuple[str, str]:
    return f"--{key}", f"--{key.replace('_', '-')}"


def _take(argv: list[str], key: str) -> tuple[list[str], str | None]:
    """``argv`` without ``--key VALUE`` / ``--key=VALUE`` (either spelling), and the value."""
    out, value, skip = [], None, False
    names = _names(key)
    for i, tok in enumerate(argv):
        if skip:
            skip = False
            continue
        head, eq, rest = tok.partition("=")
        if head in names:
            if eq:
                value = rest
            elif i + 1 < len(argv):
                value, skip = argv[i + 1], True
            continue
        out.append(tok)
    return out, value


def one_node(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str | None], list[str]]:
    """The launcher ``argv`` and the environment overrides (None: removed) that make a one-node
    probe's ranks meet on loopback; and what was changed, for the report
    (``--master_addr 10.1.2.3``)."""
    kind, at = launcher_kind(argv)
    overrides: dict[str, str | None] = {"MASTER_ADDR": LOOPBACK}
    changed = []
    if env.get("MASTER_ADDR") not in (None, "", LOOPBACK, "localhost"):
        changed.append(f"MASTER_ADDR={env['MASTER_ADDR']}")
    for name in _ENV_ADDR:
        if env.get(name):
            overrides[name] = None
            changed.append(f"{name}={env[name]}")
    if kind is None:
        return list(argv), overrides, changed
    head, rest = list(argv[:at]), list(argv[at:])
    endpoint_port: str | None = None
    for key in _ADDR[kind]:
        rest, value = _take(rest, key)
        if value is None:
            continue
        if key == "rdzv_endpoint":
            endpoint_port = value.rpartition(":")[2] if ":" in value else None
        if value not in (LOOPBACK, "localhost"):
            changed.append(f"--{key} {value}")
    if kind == "torchrun" and any(t.split("=")[0] == "--standalone" for t in rest):
        return head + rest, overrides, changed  # torchrun's own one-node rendezvous (localhost)
    rest, port = _take(rest, _PORT[kind])
    port = port or endpoint_port or str(free_loopback_port())
    if kind == "torchrun":
        rest, backend = _take(rest, "rdzv_backend")
        if backend not in (None, "static"):
            new = ["--rdzv_backend", backend, "--rdzv_endpoint", f"{LOOPBACK}:{port}"]
        else:
            new = ["--master_addr", LOOPBACK, "--master_port", port]
    elif kind == "accelerate":
        new = ["--main_process_ip", LOOPBACK, "--main_process_port", port]
    else:
        new = ["--master_addr", LOOPBACK, "--master_port", port]
    return head + new + rest, overrides, changed


def remote_rendezvous(launch: Launch | None, accelerate: dict[str, Any], env: dict[str, str]) -> str:
    """What a multi-node line's rendezvous would dial, in words: ``10.1.2.3:29500
    (--master_addr, --master_port)``; torchrun's, accelerate's and deepspeed's defaults where
    the line names none."""
    opts = dict(getattr(launch, "options", {}) or {})
    kind = getattr(launch, "launcher", "")
    if kind == "torchrun":
        endpoint = opts.get("rdzv_endpoint") or env.get("PET_RDZV_ENDPOINT")
        if endpoint:
            return f"{endpoint} (--rdzv_endpoint)"
        host = opts.get("master_addr") or env.get("PET_MASTER_ADDR") or "127.0.0.1"
        port = opts.get("master_port") or env.get("PET_MASTER_PORT") or 29500
        return f"{host}:{port} (--master_addr, --master_port)"
    if kind == "accelerate" or str(kind).startswith("trl-"):
        host = opts.get("main_process_ip") or accelerate.get("main_process_ip") or "?"
        port = opts.get("main_process_port") or accelerate.get("main_process_port") or 29500
        return f"{host}:{port} (main_process_ip, main_process_port)"
    if kind == "deepspeed":
        host = opts.get("master_addr") or "the hostfile's first host"
        return f"{host}:{opts.get('master_port') or 29500} (--master_addr, --master_port)"
    host = env.get("MASTER_ADDR") or "?"
    return f"{host}:{env.get('MASTER_PORT') or '?'} (MASTER_ADDR, MASTER_PORT)"


#: what the job's launcher set for the envdoctor rank that runs a node's probe; the probe's own
#: launcher sets its ranks' anew, and must not read the outer job's as its defaults
_JOB_VARS = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_NAME",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def job_node(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str | None], list[str]]:
    """One node's probe inside a multi-node job: the line as given (it names the job's own
    rendezvous), without the outer job's rank variables (torchrun's ``PET_*`` defaults and
    ``TORCHELASTIC_*`` included) in its environment; nothing moved."""
    drop: dict[str, str | None] = {
        k: None for k in env if k in _JOB_VARS or k.startswith(("PET_", "TORCHELASTIC_"))
    }
    return list(argv), drop, []
