"""The probe's vLLM server: its command line (from the user's), its process group, /health.

The probe server is the user's ``trl vllm-serve`` / ``vllm serve`` line with the probe model,
free loopback ports and ``--enforce_eager``; launcher, ``CUDA_VISIBLE_DEVICES``, tensor × data
parallel sizes, dtype, ``gpu_memory_utilization`` and, with a model of the user's shape,
``--max_model_len`` stay the user's. It runs in its own process group and is ended, group and
all, on every exit path.
A server that is already running belongs to the user: the probe only reads its ``/health`` (GET).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from envdoctor.coerce import as_int
from envdoctor.net_policy import LOOPBACK, LOOPBACK_ONLY, http_get, server_origin
from envdoctor.plan.interface import Launch
from envdoctor.probe.plan.tinymodel import MAX_LEN as MAX_MODEL_LEN
from envdoctor.probe.stage.groups import end_group
from envdoctor.probe.stage.warm import interpreter_of

SHIM = Path(__file__).with_name("server_shim.py")

#: the fraction of a GPU the probe server takes beside a running server (small model, small KV)
BESIDE_FRACTION = 0.06
BESIDE_MIN_MIB = 3 * 1024
#: flags of the user's line that the probe server keeps (names with underscores); the rest
#: (model, host, port, revision, quantization, speculative, LoRA, …) are the probe's own or
#: make no sense for the tiny model, and are listed in ``ServerLine.dropped``.
_KEEP = {
    "tensor_parallel_size",
    "data_parallel_size",
    "dtype",
    "gpu_memory_utilization",
    "kv_cache_dtype",
    "vllm_model_impl",
    "model_impl",
    "enable_prefix_caching",
    "distributed_executor_backend",
    "weight_transfer_config",
    "logprobs_mode",
    "max_logprobs",
    "enable_scale_out",
    "log_level",
    "uvicorn_log_level",
}
_OURS = {"model", "host", "port", "enforce_eager", "max_model_len"}
_ALIASES = {
    "vllm_gpu_memory_utilization": "gpu_memory_utilization",
    "vllm_tensor_parallel_size": "tensor_parallel_size",
}
_DEFAULT_FRACTION = 0.9  # trl vllm-serve's and vllm serve's default


@dataclass
class ServerLine:
    """The probe server's argv and environment, and what it kept of the user's line."""

    argv: list[str]
    env: dict[str, str]
    port: int
    host: str = LOOPBACK
    fraction: float = _DEFAULT_FRACTION
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    visible: str | None = None  # the user's CUDA_VISIBLE_DEVICES for the server
    dropped: list[str] = field(default_factory=list)
    #: the generic model's line, run instead when the user's shape could not be written
    fallback: ServerLine | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def _options(launch: Launch) -> dict[str, object]:
    """The user's server flags, names with underscores; ``vllm serve MODEL`` keeps MODEL out."""
    opts = dict(launch.options)
    return {_ALIASES.get(k, k): v for k, v in opts.items()}


def shim_python(launch: Launch) -> str | None:
    """The interpreter that starts the server's line through ``server_shim.py`` (its imports
    while the model is written); None: the line is started as it is, once the model is there."""
    return interpreter_of(resolve_program(launch.program)[0]) if launch.program else None


def resolve_program(program: list[str]) -> list[str]:
    """``trl`` / ``vllm`` from this interpreter's folder when they are not on PATH."""
    out = list(program)
    if out and os.sep not in out[0] and shutil.which(out[0]) is None:
        local = Path(sys.executable).with_name(out[0])
        if local.exists():
            out[0] = str(local)
    return out


def _flag(name: str, value: object, dashes: bool) -> list[str]:
    key = name.replace("_", "-") if dashes else name
    if value is None:  # "--dtype none": left to the launcher's default
        return []
    if value is True:
        return [f"--{key}"] if dashes else [f"--{key}", "true"]
    if value is False:
        return [f"--no-{key}"] if dashes else [f"--{key}", "false"]
    if isinstance(value, list):
        return [f"--{key}", *map(str, value)]
    return [f"--{key}", str(value)]


def probe_server_line(
    launch: Launch,
    model_dir: str,
    port: int,
    fraction: float | None = None,
    base_env: dict[str, str] | None = None,
    faithful: bool = False,
) -> ServerLine:
    """The probe server for the user's server ``launch``: same launcher, GPUs, parallel sizes,
    dtype and memory fraction (``fraction`` overrides it, e.g. beside a running server). With a
    model of the user's shape (``faithful``) the user's ``--max_model_len`` stays too (none:
    vLLM's default, the model's positions); the generic model is capped at its positions."""
    opts = _options(launch)
    vllm_cli = launch.launcher == "vllm-serve"
    kept = {k: v for k, v in opts.items() if k in _KEEP}
    dropped = sorted(k for k in opts if k not in _KEEP and k not in _OURS)
    try:
        user_fraction = float(str(opts.get("gpu_memory_utilization", _DEFAULT_FRACTION)))
    except ValueError:
        user_fraction = _DEFAULT_FRACTION
    share = round(fraction if fraction is not None else user_fraction, 4)
    kept["gpu_memory_utilization"] = share
    if vllm_cli:
        kept.pop("vllm_model_impl", None)
        argv = resolve_program(launch.program) + [model_dir]
    else:
        kept.pop("model_impl", None)
        kept.pop("uvicorn_log_level", None)
        argv = resolve_program(launch.program) + ["--model", model_dir]
    ours: dict[str, object] = {"host": LOOPBACK, "port": port, "enforce_eager": True}
    user_len = _count(opts.get("max_model_len")) if opts.get("max_model_len") is not None else None
    if faithful:
        if user_len is not None:
            ours["max_model_len"] = user_len
    else:
        ours["max_model_len"] = min(user_len or MAX_MODEL_LEN, MAX_MODEL_LEN)
    for name, value in {**kept, **ours}.items():
        argv += _flag(name, value, dashes=vllm_cli)
    env = {**(base_env if base_env is not None else os.environ), **launch.env}
    if vllm_cli:
        env.setdefault("VLLM_SERVER_DEV_MODE", "1")  # weight-transfer endpoints (as TRL does)
    return ServerLine(
        argv=argv,
        env=env,
        port=port,
        fraction=share,
        tensor_parallel_size=_count(opts.get("tensor_parallel_size")),
        data_parallel_size=_count(opts.get("data_parallel_size")),
        visible=launch.env.get("CUDA_VISIBLE_DEVICES", (base_env or os.environ).get("CUDA_VISIBLE_DEVICES")),
        dropped=dropped,
    )


def _count(value: object) -> int:
    """A launch line's count (a string): 1 when it is not a positive integer."""
    return as_int(str(value), 1, low=1)


def health(host: str, port: int, timeout_s: float = 2.0) -> int | None:
    """GET /health on a loopback server (``envdoctor.net_policy``: loopback only, whatever was
    allowed elsewhere; no redirect followed; one deadline): the HTTP status, or None when
    nothing answers or the host is not loopback."""
    return http_get(server_origin(host, port), "/health", LOOPBACK_ONLY, timeout_s).status


class ServerProcess:
    """The probe server in its own process group, its output in ``log``."""

    def __init__(self, line: ServerLine, log: Path, cwd: Path, argv: list[str] | None = None) -> None:
        """``argv``: what starts it, when not ``line.argv`` itself (the shim that runs it)."""
        self.line, self.log = line, log
        self._fh = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv or line.argv,
            env=line.env,
            cwd=cwd,
            stdout=self._fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.healthy_at: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exited(self) -> int | None:
        return self.proc.poll()

    def check(self) -> bool:
        """One /health poll (short timeout); remembers the first success."""
        if self.healthy_at is None and health(self.line.host, self.line.port, 0.5) == 200:
            self.healthy_at = time.monotonic()
        return self.healthy_at is not None

    def stop(self, grace_s: float) -> list[int]:
        """End the whole group (SIGTERM, SIGKILL after ``grace_s``); returns survivors."""
        try:
            return end_group(self.proc, grace_s)
        finally:
            with contextlib.suppress(OSError):
                self._fh.close()

    def log_text(self, limit: int = 400_000) -> str:
        return read_tail(self.log, limit)


def read_tail(path: Path, limit: int = 65536) -> str:
    """The last ``limit`` bytes of a log file as text ("" when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""
