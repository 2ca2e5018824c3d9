"""What the probe puts in place before it launches: the environment that keeps it offline and
its caches in its temp dir, the probe model's files, the worker's vLLM settings and the probe
server's line, and a look at a vLLM server of the user's that already runs."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envdoctor.facts.gpus import is_vllm_process
from envdoctor.findings import Finding, Severity
from envdoctor.net_policy import LOOPBACK, free_loopback_port
from envdoctor.probe.interface import ProbeResult, ProbeSpec
from envdoctor.probe.observe.watcher import GpuWatch
from envdoctor.probe.plan.tinymodel import MAX_LEN
from envdoctor.probe.plan.vllm_engine import MAX_LEN_KEY, engine_settings
from envdoctor.probe.stage.model_files import ModelWriter, write_generic
from envdoctor.probe.stage.server import (
    BESIDE_FRACTION,
    BESIDE_MIN_MIB,
    ServerLine,
    health,
    probe_server_line,
    shim_python,
)
from envdoctor.probe.stage.warm import interpreter_of
from envdoctor.units import size_text

#: Variables that keep the probe offline and its caches inside the temp dir.
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "WANDB_MODE": "disabled",
    "PYTHONUNBUFFERED": "1",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


def private_dirs(tmp: Path) -> dict[str, str]:
    """Where the probe's processes keep caches and state: its own temp dir, so that nothing is
    written to the user's home (vLLM's compile cache and usage file, flashinfer's and CUDA's JIT
    caches, Triton's and Inductor's kernels, the Hugging Face cache) and all of it goes with it."""
    return {
        "HF_HOME": str(tmp / "hf"),
        "TMPDIR": str(tmp),
        "TRITON_CACHE_DIR": str(tmp / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp / "inductor"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "VLLM_CACHE_ROOT": str(tmp / "cache" / "vllm"),
        "VLLM_CONFIG_ROOT": str(tmp / "config" / "vllm"),
        "FLASHINFER_WORKSPACE_BASE": str(tmp),
        "CUDA_CACHE_PATH": str(tmp / "nv"),
        "TORCH_EXTENSIONS_DIR": str(tmp / "torch_extensions"),
        # JIT caches of vLLM 0.26's kernel packages, which default to ~/.name (seen on a GPU)
        "HUMMING_CACHE_DIR": str(tmp / "humming"),
        "HUMMING_TMP_DIR": str(tmp / "humming-tmp"),
        "CUDA_TILE_CACHE_DIR": str(tmp / "cuda_tile"),
        "CUDA_TILE_TEMP_DIR": str(tmp / "cuda_tile-tmp"),
        "QUACK_CACHE_DIR": str(tmp / "quack"),
        "CUTE_DSL_CACHE_DIR": str(tmp / "cute_dsl"),
        "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR": str(tmp / "fa_cute_dsl"),
        "MINFER_FMHA_CACHE_DIR": str(tmp / "minfer"),
        "OUTLINES_CACHE_DIR": str(tmp / "outlines"),
    }


#: the module ``triton_read.py`` is copied as, alone in a folder of the probe's (a name no
#: package of the user's has)
TRITON_READ_MODULE = "envdoctor_triton_read"


def user_triton_cache(user_env: dict[str, str]) -> Path | None:
    """The user's own Triton kernel cache, where Triton keeps it by default for ``user_env``
    (``TRITON_CACHE_DIR``, else ``$TRITON_HOME`` or the home folder, ``.triton/cache``); None
    when there is none."""
    named = user_env.get("TRITON_CACHE_DIR", "").strip()
    home = user_env.get("TRITON_HOME", "").strip() or user_env.get("HOME") or str(Path.home())
    folder = Path(named) if named else Path(home) / ".triton" / "cache"
    return folder if folder.is_dir() else None


def kernel_cache_reads(tmp: Path, user_env: dict[str, str]) -> dict[str, str]:
    """Variables that let the probe's processes read the Triton kernels the user's runs
    compiled, while whatever they compile goes to the probe's own cache (``triton_read.py``):
    {} where the user has no Triton cache or chose a cache manager of their own."""
    found = user_triton_cache(user_env)
    if found is None or user_env.get("TRITON_CACHE_MANAGER"):
        return {}
    lib = tmp / "pylib"
    target = lib / f"{TRITON_READ_MODULE}.py"
    if not target.exists():
        lib.mkdir(parents=True, exist_ok=True)
        target.write_bytes(Path(__file__).with_name("triton_read.py").read_bytes())
    path = user_env.get("PYTHONPATH", "")
    return {
        "TRITON_CACHE_MANAGER": f"{TRITON_READ_MODULE}:ReadThroughCacheManager",
        "ENVDOCTOR_TRITON_READ_FROM": str(found),
        "PYTHONPATH": os.pathsep.join(p for p in (str(lib), path) if p),
    }


free_port = free_loopback_port  # the probe's ports: free on loopback (envdoctor.net_policy)

#: glibc's resolver option that makes it send no DNS query at all (zero attempts per server);
#: /etc/hosts still answers. torch's c10d looks up the name of every store address it formats
#: (``getnameinfo()`` without ``NI_NUMERICHOST``), and ``::ffff:127.0.0.1`` is in no hosts file,
#: so without it each rank and torchrun's agent would ask the machine's resolver.
NO_DNS_QUERY = "attempts:0"
#: what c10d then logs once per process (it falls back to the numeric address): envdoctor's own
#: doing, left out of the log tails the probe reports
NO_DNS_NOTICE = "[c10d] The hostname of the client socket cannot be retrieved"


def loopback_env(env: dict[str, str], overrides: dict[str, str | None], spec: ProbeSpec) -> None:
    """Apply the rendezvous overrides; vLLM's own address (``get_ip()``, where the weight-sync
    group meets) is loopback too unless the user set ``VLLM_HOST_IP`` or the server runs Ray.
    No process of the probe sends a DNS query (``RES_OPTIONS``, the user's options kept)."""
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    options = env.get("RES_OPTIONS", "").split()
    if options[-1:] != [NO_DNS_QUERY]:  # the last setting of an option wins
        env["RES_OPTIONS"] = " ".join([*options, NO_DNS_QUERY])
    ray = (
        spec.server_launch is not None
        and str(spec.server_launch.options.get("distributed_executor_backend")) == "ray"
    )
    if not ray and not spec.job_rendezvous:  # a job's node: vLLM finds its own address
        env.setdefault("VLLM_HOST_IP", LOOPBACK)


def python_of(launcher: list[str]) -> str:
    """The interpreter the launcher runs: a Python named on the line, the Python of a console
    script (``accelerate``, ``torchrun``: its ``#!`` line), else this one."""
    return (interpreter_of(launcher[0]) if launcher else None) or sys.executable


class ProbeModelFiles:
    """The probe model on disk: the user's shape written in the background while the trainer
    imports (the worker waits for ``model.ready.json``), else the generic model. In server mode
    the server starts meanwhile through ``server_shim.py``, which waits for the same word; a
    server line that is not Python waits for the weights before it starts. ``start`` begins
    the writing; ``stop`` ends a writer still running (the lifecycle holds it before ``start``)."""

    def __init__(self, spec: ProbeSpec, tmp: Path, result: ProbeResult, mark: Callable[..., None]) -> None:
        self.spec, self.tmp, self.result, self.mark = spec, tmp, result, mark
        self.writer: ModelWriter | None = None
        self.ready = tmp / "model.ready.json"
        self.model_dir: str | None = None
        self.faithful = False

    def start(self) -> None:
        spec, tmp, result = self.spec, self.tmp, self.result
        model = spec.model
        result.model = dict(model.summary) if model else {"source": "generic"}
        result.model.setdefault("deviations", list(model.deviations) if model else [])
        if model is not None and model.faithful:
            env = {
                **os.environ,
                **spec.env,
                **OFFLINE,
                **private_dirs(tmp),
                "CUDA_VISIBLE_DEVICES": "",
            }  # the weights are written on the CPU
            try:
                self.writer = ModelWriter(
                    model,
                    tmp / "model",
                    python_of(spec.launcher),
                    env,
                    timeout_s=max(min(spec.timeout_s / 2, 300.0), 1.0),
                )
            except (RuntimeError, OSError) as exc:
                self._generic(str(exc))
            else:
                self.model_dir, self.faithful = str(tmp / "model"), True
                server = spec.server_launch if spec.use_vllm and spec.vllm_mode == "server" else None
                if server is not None and shim_python(server) is None:  # the server starts on it
                    self.writer.wait()
                    self.poll()
        else:
            self._generic(None)

    @property
    def pending(self) -> bool:
        return self.writer is not None and not self.ready.exists()

    def poll(self) -> None:
        """Once the writer ended: the user's shape, or the generic model in its place."""
        if self.writer is None or self.ready.exists() or not self.writer.done():
            return
        try:
            info = self.writer.result()
        except (RuntimeError, OSError) as exc:
            self._generic(str(exc))
        else:
            self.mark("model_written")
            self.result.model.update(ran="the user's shape", writer=info)
            self._announce({"model_dir": self.model_dir, "faithful": True})

    def stop(self) -> None:
        if self.writer is not None:
            self.writer.stop()

    def _announce(self, ready: dict[str, Any]) -> None:
        tmp = self.ready.with_suffix(".tmp")
        tmp.write_text(json.dumps(ready))
        os.replace(tmp, self.ready)

    def _generic(self, why: str | None) -> None:
        spec, result = self.spec, self.result
        if why is not None and spec.model is not None:
            result.findings.append(
                Finding(
                    "PRB020",
                    Severity.WARNING,
                    f"the probe could not build a model of {spec.model.name}'s shape ({why}); it ran "
                    "the generic tiny model, which proves the GPU layout and the weight path but not "
                    "your architecture",
                    "check that this transformers release knows the model's "
                    f"model_type ({spec.model.summary.get('model_type')}); run one real step "
                    "(max_steps: 1) to see the rest",
                    {"model": spec.model.name, "reason": why},
                )
            )
            result.model = {
                "source": "generic",
                "deviations": [f"a model of {spec.model.name}'s shape could not be built: {why}"],
            }
        result.model["ran"] = "generic"
        self.faithful = False
        self.model_dir = None
        overrides: dict[str, Any] = {}
        if spec.use_vllm:
            folder = self.tmp / ("generic" if self.writer is not None else "model")
            write_generic(folder)
            self.mark("model_written")
            self.model_dir = str(folder)
            key = MAX_LEN_KEY.get(spec.vllm_mode or "")
            if key:
                user = spec.vllm.get(key)
                overrides[key] = min(int(user), MAX_LEN) if isinstance(user, int) else MAX_LEN
        if result.vllm and overrides:  # what the engine now gets
            result.vllm["max_model_len"] = next(iter(overrides.values()))
        if self.writer is not None:  # the worker waits for this
            self._announce({"model_dir": self.model_dir, "faithful": False, "vllm": overrides})


def prepare_vllm(
    spec: ProbeSpec,
    tmp: Path,
    result: ProbeResult,
    model_dir: str | None,
    faithful: bool,
    fallback_dir: str | None = None,
) -> tuple[dict[str, Any] | None, ServerLine | None]:
    """The worker's vLLM settings and the probe server's line (None, None: no vLLM); with
    ``fallback_dir`` (the user's shape still being written) the line carries the generic
    model's too."""
    if not spec.use_vllm or model_dir is None:
        return None, None
    settings: dict[str, Any] = {"vllm": dict(spec.vllm)}
    key = MAX_LEN_KEY.get(spec.vllm_mode or "")
    if key and not faithful:  # the generic model's positions bound its context
        user = settings["vllm"].get(key)
        settings["vllm"][key] = min(int(user), MAX_LEN) if isinstance(user, int) else MAX_LEN
    result.vllm = engine_settings(spec, settings["vllm"], faithful)
    if spec.vllm_mode == "colocate":
        result.generation = "TRL's in-process vLLM (colocate)"
        return settings, None
    if spec.vllm_mode == "legacy":
        result.generation = "TRL's in-process vLLM on vllm_device (legacy)"
        return settings, None
    if spec.vllm_mode == "server" and spec.remote_server is not None:
        host, port, group_port = spec.remote_server
        settings["vllm"].update(
            vllm_server_host=host,
            vllm_server_port=port,
            vllm_group_port=group_port,
            vllm_server_timeout=max(spec.timeout_s, 1.0),
        )
        settings["vllm"].pop("vllm_server_base_url", None)
        result.server.update(remote=f"{host}:{port}", group_port=group_port)
        result.generation = f"the probe vLLM server at {host}:{port} (another node of the job)"
        return settings, None
    if spec.vllm_mode != "server" or spec.server_launch is None:
        result.findings.append(
            Finding(
                "PRB016",
                Severity.WARNING,
                "the vLLM server was not probed: no `trl vllm-serve` / "
                "`vllm serve` line was given, so the probe does not know its GPUs and flags; the "
                "trainer generated with its own generate()",
                "give the server line too: --launch "
                "'CUDA_VISIBLE_DEVICES=… trl vllm-serve …' --launch '<trainer line>'",
                {"part": "server"},
            )
        )
        return None, None
    fraction = beside_user_server(spec, result)
    if fraction is False:
        return None, None
    port, group_port = free_port(), free_port()
    while group_port == port:
        group_port = free_port()
    line = probe_server_line(
        spec.server_launch,
        model_dir,
        port,
        fraction if isinstance(fraction, float) else None,
        faithful=faithful,
    )
    if fallback_dir is not None:
        line.fallback = probe_server_line(
            spec.server_launch, fallback_dir, port, fraction if isinstance(fraction, float) else None
        )
    result.vllm = engine_settings(spec, settings["vllm"], faithful, line)
    settings["vllm"].update(
        vllm_server_host=line.host,
        vllm_server_port=port,
        vllm_group_port=group_port,
        vllm_server_timeout=max(spec.timeout_s, 1.0),
    )
    settings["vllm"].pop("vllm_server_base_url", None)
    result.server.update(
        port=port,
        group_port=group_port,
        fraction=line.fraction,
        dropped=line.dropped,
        visible=line.visible,
        tp=line.tensor_parallel_size,
        dp=line.data_parallel_size,
    )
    result.generation = f"a probe vLLM server ({' '.join(spec.server_launch.program)})"
    return settings, line


def beside_user_server(spec: ProbeSpec, result: ProbeResult) -> float | bool | None:
    """A server already running on the server's GPUs or port: read its /health and memory;
    the probe server's fraction beside it, False when there is no room, None: no server."""
    if spec.user_server is None:
        return None
    host, port = spec.user_server
    status = health(host, port)
    watch = GpuWatch(pgid=-1).start()
    try:
        holders = watch.others(set())
        memory = watch.memory()
    finally:
        watch.close()
    gpus = spec.server_visible[:1] or sorted(memory)[:1]
    vllm_pids = [
        (pid, gpu, mib)
        for gpu, rows in holders.items()
        for pid, name, mib in rows
        if gpu in spec.server_visible and is_vllm_process(name)
    ]
    if status is None and not vllm_pids:
        return None
    result.user_server = {
        "url": f"http://{host}:{port}",
        "health_before": status,
        "processes_before": vllm_pids,
    }
    if not gpus or gpus[0] not in memory:
        return 0.1 if status is not None else None
    free, total = memory[gpus[0]]
    fraction = round(max(0.02, min(0.2, max(BESIDE_FRACTION, BESIDE_MIN_MIB / total))), 3)
    need = fraction * total + 1024
    result.user_server.update(gpu=gpus[0], free_mib=free, total_mib=total, fraction=fraction)
    if free < need:
        result.findings.append(
            Finding(
                "PRB016",
                Severity.WARNING,
                f"the vLLM server part was not probed: a server is already running (http://{host}:"
                f"{port}, /health {status or 'no answer'}) and GPU {gpus[0]} has "
                f"{size_text(free, of='MiB')} free, less than the {size_text(need, of='MiB')} a probe "
                "server beside it needs; the "
                "trainer generated with its own generate(), and the running server was not touched",
                "run the probe before starting the server, or free memory on that GPU",
                {"gpu": gpus[0], "free_mib": free, "need_mib": int(need)},
            )
        )
        return False
    return fraction


def after_user_server(spec: ProbeSpec, result: ProbeResult, watch: GpuWatch | None) -> None:
    """Read the user's server again (GET /health, NVML memory): the probe changed nothing."""
    if not result.user_server or spec.user_server is None:
        return
    host, port = spec.user_server
    result.user_server["health_after"] = health(host, port)
    w = GpuWatch(pgid=-1).start()
    try:
        after = {(pid, gpu): mib for gpu, rows in w.others(set()).items() for pid, _name, mib in rows}
    finally:
        w.close()
    result.user_server["processes_after"] = [
        (pid, gpu, after.get((pid, gpu))) for pid, gpu, _mib in result.user_server.get("processes_before", [])
    ]
