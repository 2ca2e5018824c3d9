"""Launch the probe like the user would, watch it, judge it, and leave nothing behind.

The launcher runs in its own process group (``start_new_session``); a wall-clock limit, Ctrl-C
or SIGTERM ends the whole group (SIGTERM, then SIGKILL after a grace period). The temporary
directory (spec, logs, rank results, any output) is removed in every case.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from envdoctor.facts.gpus import is_vllm_process
from envdoctor.findings import Finding, Severity
from envdoctor.net_policy import LOOPBACK, free_loopback_port
from envdoctor.probe.failures import SYNC_FATAL, classify
from envdoctor.probe.groups import end_group
from envdoctor.probe.interface import ProbeResult, ProbeSpec
from envdoctor.probe.model_files import ModelWriter, write_generic
from envdoctor.probe.plan_vllm import MAX_LEN_KEY, engine_settings
from envdoctor.probe.rendezvous import one_node
from envdoctor.probe.server import (
    BESIDE_FRACTION,
    BESIDE_MIN_MIB,
    ServerLine,
    ServerProcess,
    health,
    probe_server_line,
    read_tail,
)
from envdoctor.probe.sync_judge import judge_sync
from envdoctor.probe.tinymodel import MAX_LEN
from envdoctor.probe.vllm_judge import gib, judge_vllm
from envdoctor.probe.watcher import GpuWatch
from envdoctor.units import size_text

WORKER = Path(__file__).with_name("worker.py")
GRACE_S = 5.0
#: Variables that keep the probe offline and its caches inside the temp dir.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1",
           "TRL_EXPERIMENTAL_SILENCE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


def private_dirs(tmp: Path) -> dict[str, str]:
    """Where the probe's processes keep caches and state: its own temp dir, so that nothing is
    written to the user's home (vLLM's compile cache and usage file, flashinfer's and CUDA's JIT
    caches, Triton's and Inductor's kernels, the Hugging Face cache) and all of it goes with it."""
    return {"HF_HOME": str(tmp / "hf"), "TMPDIR": str(tmp), "TRITON_CACHE_DIR": str(tmp / "triton"),
            "TORCHINDUCTOR_CACHE_DIR": str(tmp / "inductor"), "XDG_CACHE_HOME": str(tmp / "cache"),
            "XDG_CONFIG_HOME": str(tmp / "config"), "VLLM_CACHE_ROOT": str(tmp / "cache" / "vllm"),
            "VLLM_CONFIG_ROOT": str(tmp / "config" / "vllm"), "FLASHINFER_WORKSPACE_BASE": str(tmp),
            "CUDA_CACHE_PATH": str(tmp / "nv"), "TORCH_EXTENSIONS_DIR": str(tmp / "torch_extensions"),
            # JIT caches of vLLM 0.26's kernel packages, which default to ~/.name (seen on a GPU)
            "HUMMING_CACHE_DIR": str(tmp / "humming"), "HUMMING_TMP_DIR": str(tmp / "humming-tmp"),
            "CUDA_TILE_CACHE_DIR": str(tmp / "cuda_tile"), "CUDA_TILE_TEMP_DIR": str(tmp / "cuda_tile-tmp"),
            "QUACK_CACHE_DIR": str(tmp / "quack"), "CUTE_DSL_CACHE_DIR": str(tmp / "cute_dsl"),
            "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR": str(tmp / "fa_cute_dsl"),
            "MINFER_FMHA_CACHE_DIR": str(tmp / "minfer"), "OUTLINES_CACHE_DIR": str(tmp / "outlines")}


free_port = free_loopback_port  # the probe's ports: free on loopback (envdoctor.net_policy)


def _loopback_env(env: dict[str, str], overrides: dict[str, str | None],
                  spec: ProbeSpec) -> None:
    """Apply the rendezvous overrides; vLLM's own address (``get_ip()``, where the weight-sync
    group meets) is loopback too unless the user set ``VLLM_HOST_IP`` or the server runs Ray."""
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    ray = spec.server_launch is not None and \
        str(spec.server_launch.options.get("distributed_executor_backend")) == "ray"
    if not ray:
        env.setdefault("VLLM_HOST_IP", LOOPBACK)


def _not_run_multi_node(spec: ProbeSpec, result: ProbeResult) -> ProbeResult:
    """A line over several nodes: said at once, nothing launched (PRB022)."""
    result.status = "not run"
    result.phase = "not launched"
    result.findings.append(Finding(
        "PRB022", Severity.WARNING,
        f"the probe was not run: the launch line spans several nodes and its rendezvous would dial "
        f"{spec.multi_node}, waiting for the other nodes until the limit; the probe runs on this "
        "one node and contacts loopback only",
        "probe this node's share with a one-node line (e.g. torchrun --nproc_per_node N train.py),"
        " and check the whole job with `-m envdoctor check --distributed` inside your launcher "
        "(docs/cluster.md)", {"rendezvous": spec.multi_node}))
    result.temp_dir_removed = True
    result.t_end = time.time()
    return result


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While the probe runs, SIGTERM to envdoctor ends the probe like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM while the probe ends what it started (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _end_gpu_holders(watch: GpuWatch, result: ProbeResult) -> None:
    """Any probe pid NVML still lists after the group ended (e.g. one that left the group):
    record it, and end it (it was seen in the probe's group during the run)."""
    ours = {pid for pid, _gpu in watch.seen}
    held = watch.holding(ours)
    for pid in sorted({p for p, _g, _m in held}):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
                time.sleep(GRACE_S / 5 if sig == signal.SIGTERM else 0.2)
    result.leftover_gpu = [{"pid": p, "gpu": g, "mib": m} for p, g, m in held]
    still = {p for p, _g, _m in watch.holding(ours)} if held else set()
    result.leftover_pids = sorted(set(result.leftover_pids) | still)


#: the phase a rank is in, after it reported finishing the key's phase
_NEXT = {"launching": "launching", "started": "imports", "imports": "CUDA init",
         "cuda_init": "model build", "model_build": "trainer init", "trainer_init": "step",
         "steps": "checking", "sync_start": "weight sync", "sync_done": "step",
         "model_wait": "waiting for the probe model", "weight_sync_proof": "checking"}


def _phase_of(log: Path) -> str:
    phase = "launching"
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return phase
    for line in text.splitlines():
        if line.startswith("ENVDOCTOR_PHASE"):
            phase = line.split()[-1]
    return _NEXT.get(phase, phase)


def run_probe(spec: ProbeSpec, on_phase: Callable[[str], None] | None = None) -> ProbeResult:
    """Run the probe described by ``spec``; never raises for what the probe does."""
    result = ProbeResult(status="error", t_start=time.time())
    if spec.multi_node:
        return _not_run_multi_node(spec, result)
    tmp = Path(tempfile.mkdtemp(prefix="envdoctor-probe-"))
    start = time.monotonic()
    proc: subprocess.Popen | None = None
    files: _ProbeModelFiles | None = None
    watch: GpuWatch | None = None
    server: ServerProcess | None = None
    server_watch: GpuWatch | None = None
    mark = _marker(result, start)
    try:
        with _sigterm_as_interrupt():
            files = _ProbeModelFiles(spec, tmp, result, mark)
            vllm_spec, server_line = _prepare_vllm(spec, tmp, result, files.model_dir,
                                                   files.faithful)
            worker_spec = {
                "model_dir": files.model_dir, "model_faithful": files.faithful,
                "model_ready": str(files.ready) if files.pending else None,
                "out_dir": str(tmp), "steps": spec.steps, "model_family": spec.model_family,
                "bf16": spec.bf16, "fp16": spec.fp16,
                "gradient_checkpointing": spec.gradient_checkpointing,
                "num_generations": spec.num_generations,
                "per_device_train_batch_size": spec.per_device_train_batch_size,
                "gradient_accumulation_steps": spec.gradient_accumulation_steps,
                "use_vllm": vllm_spec is not None, "vllm_mode": spec.vllm_mode
                if vllm_spec is not None and spec.vllm_mode != "legacy" else None,
                **(vllm_spec or {}),
                "expected_device": {str(r): "cpu" for r, g in spec.rank_gpus.items() if g is None},
                "fault": spec.fault, "fault_at": spec.fault_at}
            (tmp / "spec.json").write_text(json.dumps(worker_spec))
            env = {**os.environ, **spec.env, **OFFLINE, **private_dirs(tmp)}
            launcher, rdzv_env, moved = one_node(spec.launcher, env)
            _loopback_env(env, rdzv_env, spec)
            if moved:
                result.rendezvous_moved = moved
                result.findings.append(Finding(
                    "PRB012", Severity.INFO, "the probe's ranks met on loopback (one node), not "
                    f"where the launch line points ({', '.join(moved)})", "nothing to do",
                    {"replaced": moved}))
            if server_line is not None:  # first: its start overlaps the trainer's imports
                server_line.env.update({**OFFLINE, **private_dirs(tmp)})
                _loopback_env(server_line.env, {"MASTER_ADDR": LOOPBACK}, spec)
                for e in (env, server_line.env):  # NCCL names a refused group only so
                    e.setdefault("NCCL_DEBUG", "WARN")
                mark("server_start")
                try:
                    server = ServerProcess(server_line, tmp / "server.log", tmp)
                except OSError as exc:
                    result.findings.append(Finding(
                        "PRB001", Severity.ERROR, f"could not start the vLLM server "
                        f"{server_line.argv[0]!r}: {exc.strerror or exc}", "install vLLM / TRL "
                        "there, or give the server line with the launcher's full path",
                        {"argv": server_line.argv}))
                    return result
                result.server.update(pid=server.pid, argv=server_line.argv,
                                     url=server_line.url)
                server_watch = GpuWatch(pgid=server.pid).start()
            argv = launcher + [str(WORKER), str(tmp / "spec.json")]
            result.argv = list(argv)
            log = tmp / "probe.log"
            with open(log, "wb") as log_fh:
                try:
                    mark("trainer_start")
                    proc = subprocess.Popen(argv, env=env, cwd=tmp, stdout=log_fh,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
                except OSError as exc:
                    result.findings.append(Finding(
                        "PRB001", Severity.ERROR, f"could not start the launcher {argv[0]!r}: "
                        f"{exc.strerror or exc}", "install it, or give the launch command with "
                        "the full path of the launcher", {"argv": argv}))
                    return result
                watch = GpuWatch(pgid=proc.pid).start()
                result.status = _wait(proc, log, spec.timeout_s, result, on_phase, server,
                                      mark, files.poll)
            mark("trainer_end")
            result.returncode = proc.returncode
    except KeyboardInterrupt:
        result.status = "interrupted"
    except OSError as exc:  # its temp dir (model, spec, logs) could not be written
        result.findings.append(Finding(
            "PRB001", Severity.ERROR, f"the probe could not write its files in {tmp}: "
            f"{exc.strerror or exc}", "free disk space in TMPDIR, or point TMPDIR elsewhere",
            {"path": str(tmp)}))
    finally:
        with _shielded():  # a second Ctrl-C or a SIGTERM must not cut the teardown short
            if on_phase and (proc is not None or server is not None):
                on_phase("teardown")
            if files is not None:
                files.stop()
            if proc is not None:
                mark("trainer_end", first=True)
                result.leftover_pids = end_group(proc, GRACE_S)
            if server is not None:
                result.server["exit_code"] = server.exited()
                result.leftover_pids = sorted(set(result.leftover_pids)
                                              | set(server.stop(GRACE_S)))
                result.server["log"] = server.log_text()
                result.server["log_tail"] = _tail(result.server["log"], 40)
            for w in (watch, server_watch):
                if w is not None:
                    w.stop()
                    _end_gpu_holders(w, result)
            live = next((w for w in (server_watch, watch) if w is not None and w.error is None),
                        None)
            if live is not None and spec.use_vllm:
                result.holders = live.others(set())  # who else holds each GPU, for findings
            _after_user_server(spec, result, watch or server_watch)
            mark("end")
            result.wall_s = round(time.monotonic() - start, 3)
            result.t_end = time.time()
            _collect(tmp, spec, result, watch)
            for w in (watch, server_watch):
                if w is not None:
                    w.close()
            shutil.rmtree(tmp, ignore_errors=True)
            result.temp_dir_removed = not tmp.exists()
    _judge(spec, result, watch)
    judge_vllm(spec, result, server_watch)
    judge_sync(spec, result)
    return result


def _marker(result: ProbeResult, start: float) -> Callable[..., None]:
    def mark(name: str, first: bool = False) -> None:
        if first and name in result.events:
            return
        result.events[name] = round(time.monotonic() - start, 3)

    return mark


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _python_of(launcher: list[str]) -> str:
    """The interpreter the launcher runs (its own Python for console scripts)."""
    head = launcher[0] if launcher else sys.executable
    if os.path.basename(head).startswith("python"):
        return shutil.which(head) or head
    return sys.executable


class _ProbeModelFiles:
    """The probe model on disk: the user's shape written in the background while the trainer
    imports (the worker waits for ``model.ready.json``), else the generic model. In server mode
    the server needs it before it starts, so there it is waited for at once."""

    def __init__(self, spec: ProbeSpec, tmp: Path, result: ProbeResult,
                 mark: Callable[..., None]) -> None:
        self.spec, self.tmp, self.result, self.mark = spec, tmp, result, mark
        self.writer: ModelWriter | None = None
        self.ready = tmp / "model.ready.json"
        model = spec.model
        result.model = dict(model.summary) if model else {"source": "generic"}
        result.model.setdefault("deviations", list(model.deviations) if model else [])
        self.model_dir: str | None = None
        self.faithful = False
        if model is not None and model.faithful:
            env = {**os.environ, **spec.env, **OFFLINE, **private_dirs(tmp),
                   "CUDA_VISIBLE_DEVICES": ""}  # the weights are written on the CPU
            try:
                self.writer = ModelWriter(model, tmp / "model", _python_of(spec.launcher), env,
                                          timeout_s=max(min(spec.timeout_s / 2, 300.0), 1.0))
            except (RuntimeError, OSError) as exc:
                self._generic(str(exc))
            else:
                self.model_dir, self.faithful = str(tmp / "model"), True
                if spec.use_vllm and spec.vllm_mode == "server":
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
            result.findings.append(Finding(
                "PRB020", Severity.WARNING,
                f"the probe could not build a model of {spec.model.name}'s shape ({why}); it ran "
                "the generic tiny model, which proves the GPU layout and the weight path but not "
                "your architecture", "check that this transformers release knows the model's "
                f"model_type ({spec.model.summary.get('model_type')}); run one real step "
                "(max_steps: 1) to see the rest", {"model": spec.model.name, "reason": why}))
            result.model = {"source": "generic", "deviations": [
                f"a model of {spec.model.name}'s shape could not be built: {why}"]}
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


def _prepare_vllm(spec: ProbeSpec, tmp: Path, result: ProbeResult, model_dir: str | None,
                  faithful: bool) -> tuple[dict[str, Any] | None, ServerLine | None]:
    """The worker's vLLM settings and the probe server's line (None, None: no vLLM)."""
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
    if spec.vllm_mode != "server" or spec.server_launch is None:
        result.findings.append(Finding(
            "PRB016", Severity.WARNING, "the vLLM server was not probed: no `trl vllm-serve` / "
            "`vllm serve` line was given, so the probe does not know its GPUs and flags; the "
            "trainer generated with its own generate()", "give the server line too: --launch "
            "'CUDA_VISIBLE_DEVICES=… trl vllm-serve …' --launch '<trainer line>'",
            {"part": "server"}))
        return None, None
    fraction = _beside_user_server(spec, result)
    if fraction is False:
        return None, None
    port, group_port = free_port(), free_port()
    while group_port == port:
        group_port = free_port()
    line = probe_server_line(spec.server_launch, model_dir, port,
                             fraction if isinstance(fraction, float) else None, faithful=faithful)
    result.vllm = engine_settings(spec, settings["vllm"], faithful, line)
    settings["vllm"].update(vllm_server_host=line.host, vllm_server_port=port,
                            vllm_group_port=group_port,
                            vllm_server_timeout=max(spec.timeout_s, 1.0))
    settings["vllm"].pop("vllm_server_base_url", None)
    result.server.update(port=port, group_port=group_port, fraction=line.fraction,
                         dropped=line.dropped, visible=line.visible,
                         tp=line.tensor_parallel_size, dp=line.data_parallel_size)
    result.generation = f"a probe vLLM server ({' '.join(spec.server_launch.program)})"
    return settings, line


def _beside_user_server(spec: ProbeSpec, result: ProbeResult) -> float | bool | None:
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
    vllm_pids = [(pid, gpu, mib) for gpu, rows in holders.items() for pid, name, mib in rows
                 if gpu in spec.server_visible and is_vllm_process(name)]
    if status is None and not vllm_pids:
        return None
    result.user_server = {"url": f"http://{host}:{port}", "health_before": status,
                          "processes_before": vllm_pids}
    if not gpus or gpus[0] not in memory:
        return 0.1 if status is not None else None
    free, total = memory[gpus[0]]
    fraction = round(max(0.02, min(0.2, max(BESIDE_FRACTION, BESIDE_MIN_MIB / total))), 3)
    need = fraction * total + 1024
    result.user_server.update(gpu=gpus[0], free_mib=free, total_mib=total, fraction=fraction)
    if free < need:
        result.findings.append(Finding(
            "PRB016", Severity.WARNING,
            f"the vLLM server part was not probed: a server is already running (http://{host}:"
            f"{port}, /health {status or 'no answer'}) and GPU {gpus[0]} has "
            f"{size_text(free, of='MiB')} free, less than the {size_text(need, of='MiB')} a probe "
            "server beside it needs; the "
            "trainer generated with its own generate(), and the running server was not touched",
            "run the probe before starting the server, or free memory on that GPU",
            {"gpu": gpus[0], "free_mib": free, "need_mib": int(need)}))
        return False
    return fraction


def _after_user_server(spec: ProbeSpec, result: ProbeResult, watch: GpuWatch | None) -> None:
    """Read the user's server again (GET /health, NVML memory): the probe changed nothing."""
    if not result.user_server or spec.user_server is None:
        return
    host, port = spec.user_server
    result.user_server["health_after"] = health(host, port)
    w = GpuWatch(pgid=-1).start()
    try:
        after = {(pid, gpu): mib for gpu, rows in w.others(set()).items()
                 for pid, _name, mib in rows}
    finally:
        w.close()
    result.user_server["processes_after"] = [
        (pid, gpu, after.get((pid, gpu))) for pid, gpu, _mib in
        result.user_server.get("processes_before", [])]


def _wait(proc: subprocess.Popen, log: Path, timeout_s: float, result: ProbeResult,
          on_phase: Callable[[str], None] | None, server: ServerProcess | None = None,
          mark: Callable[..., None] | None = None,
          tick: Callable[[], None] | None = None) -> str:
    deadline = time.monotonic() + timeout_s
    last = ""
    next_poll = next_scan = 0.0
    while True:
        try:
            proc.wait(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            pass
        if tick is not None:
            tick()
        phase = _phase_of(log)
        shown = phase
        if server is not None:
            if server.healthy_at is None and time.monotonic() >= next_poll:
                next_poll = time.monotonic() + 0.5
                if server.check() and mark:
                    mark("server_healthy")
            if server.healthy_at is not None and time.monotonic() >= next_scan:
                next_scan = time.monotonic() + 1.0
                fatal = SYNC_FATAL.search(server.log_text(65536)) or SYNC_FATAL.search(
                    read_tail(log))
                if fatal:  # NCCL refused the weight-sync group: it will never form
                    result.server["sync_failed"] = fatal.group(0)[:200]
                    result.phase = phase
                    return "ran"
            code = server.exited()
            if code is not None:  # the server died: the trainer would wait for it in vain
                result.server["died"] = code
                if mark:
                    mark("server_end")
                result.phase = "server starting" if server.healthy_at is None else phase
                return "ran"
            shown = (("server starting" if server.healthy_at is None else "server ready")
                     + f" · trainer: {phase}")
        if shown != last:
            last = shown
            result.phase = phase
            if on_phase:
                on_phase(shown)
        if time.monotonic() > deadline:
            result.phase = _phase_of(log)
            if server is not None and server.healthy_at is None:
                result.phase = "server starting"
            return "timeout"
    if server is not None and server.healthy_at is None and server.check() and mark:
        mark("server_healthy")  # the trainer was faster than the last poll
    result.phase = "done"
    return "ran"


def _collect(tmp: Path, spec: ProbeSpec, result: ProbeResult, watch: GpuWatch | None) -> None:
    for path in tmp.glob("rank*.started.json"):
        with contextlib.suppress(ValueError, OSError):
            data = json.loads(path.read_text())
            result.ranks[int(data["rank"])] = {**data, "finished": False}
    for path in tmp.glob("rank*.json"):
        if path.name.endswith(".started.json"):
            continue
        with contextlib.suppress(ValueError, OSError):
            data = json.loads(path.read_text())
            result.ranks[int(data["rank"])] = {**data, "finished": True}
    try:
        lines = (tmp / "probe.log").read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    result.log_tail = "\n".join(line for line in lines[-40:]
                                if not line.startswith("ENVDOCTOR_PHASE"))


def _judge(spec: ProbeSpec, result: ProbeResult, watch: GpuWatch | None) -> None:
    f = result.findings
    if result.status == "timeout":
        f.append(Finding("PRB006", Severity.ERROR,
                         f"the probe did not finish within {spec.timeout_s:.0f} s (it was at: "
                         f"{result.phase}); every process of it was ended",
                         "a hang at 'step' with several ranks is usually a collective waiting "
                         "for a rank (NCCL); run with NCCL_DEBUG=INFO, or raise --probe-timeout "
                         "if the machine is just slow", {"phase": result.phase}))
    if result.status == "interrupted":
        f.append(Finding("PRB006", Severity.ERROR, "the probe was interrupted; every process of "
                         "it was ended", "run it again", {"phase": result.phase}))
    texts = []
    failed = [r for r, d in result.ranks.items() if d.get("finished") and d.get("error")]
    for rank, data in sorted(result.ranks.items()):
        if not data.get("finished"):
            ended_by_probe = result.server.get("died") is not None or \
                result.server.get("sync_failed")
            if ended_by_probe and result.status == "ran":
                why = ("the vLLM server exited" if result.server.get("died") is not None
                       else "NCCL refused the weight-sync group")
                f.append(Finding("PRB001", Severity.INFO,
                                 f"rank {rank} (pid {data.get('pid')}) was ended by the probe "
                                 f"after {why}", "see the vLLM finding", {"rank": rank}))
            elif result.status == "ran" and failed:  # the launcher ended it after another failed
                f.append(Finding("PRB001", Severity.INFO,
                                 f"rank {rank} (pid {data.get('pid')}) was ended by the launcher "
                                 f"after rank {failed[0]} failed", "see rank "
                                 f"{failed[0]}'s error", {"rank": rank}))
            elif result.status == "ran":
                code = result.returncode
                killed = code in (-9, 137) or "SIGKILL" in result.log_tail
                last = [ln for ln in result.log_tail.splitlines() if ln.strip()][-3:]
                f.append(Finding("PRB001", Severity.ERROR,
                                 f"rank {rank} (pid {data.get('pid')}) died without a result "
                                 f"(launcher exit code {code}"
                                 + ("; killed, by the OOM killer?)" if killed else ")")
                                 + (": " + " | ".join(last)[-300:] if last else ""),
                                 "check `dmesg` for the OOM killer" if killed else
                                 "see the rank's log (-v)", {"log_tail": result.log_tail[-3000:]}))
            continue
        err = data.get("error")
        if err:
            texts.append(f"{err.get('type')}: {err.get('message')}\n{err.get('traceback', '')}")
        _judge_rank(spec, rank, data, f)
    program = shutil.which(spec.launcher[0]) or spec.launcher[0] if spec.launcher else None
    known = classify("\n".join(texts) + "\n" + result.log_tail, program) if texts or (
        result.status == "ran" and result.returncode) else []
    seen = {(x.rule, x.message) for x in f}
    f.extend(x for x in known if (x.rule, x.message) not in seen)
    failed_ranks = [r for r, d in result.ranks.items() if d.get("error")]
    if failed_ranks and not known:
        first = result.ranks[failed_ranks[0]]["error"]
        f.append(Finding("PRB001", Severity.ERROR,
                         f"the GRPO step failed on rank {failed_ranks[0]}: {first.get('type')}: "
                         f"{str(first.get('message'))[:300]}",
                         "see the last lines of the rank's log (-v)",
                         {"log_tail": result.log_tail[-3000:]}))
    if result.status == "ran" and not result.ranks and result.server.get("died") is None:
        f.append(Finding("PRB001", Severity.ERROR,
                         f"the launcher exited ({result.returncode}) before any rank started",
                         "run the launch command by hand to see why",
                         {"log_tail": result.log_tail[-3000:]}))
    _judge_isolation(spec, result, watch)
    errors = [x for x in f if x.severity == Severity.ERROR]
    if result.status == "ran":
        result.status = "fail" if errors else "pass"


def _judge_rank(spec: ProbeSpec, rank: int, data: dict, f: list[Finding]) -> None:
    refused = "does not support `nn.DataParallel`" in str((data.get("error") or {}).get("message"))
    if not refused and (data.get("data_parallel") or data.get("ok") and data.get("n_gpu", 0) > 1):
        v = data.get("versions") or {}
        f.append(Finding("PRB002", Severity.ERROR,
                         f"rank {rank} ran with n_gpu={data.get('n_gpu')} and the model wrapped in "
                         f"{data.get('wrapper')}: transformers' Trainer put replicas on every "
                         f"visible GPU (TRL {v.get('trl', '?')} with transformers "
                         f"{v.get('transformers', '?')} lets this happen silently; newer TRL "
                         "refuses it at init)", "launch with torchrun --nproc_per_node N or set "
                         "CUDA_VISIBLE_DEVICES to the training GPUs",
                         {"rank": rank, "n_gpu": data.get("n_gpu"),
                          "wrapper": data.get("wrapper"), "versions": v}))
    if not data.get("ok"):
        return
    device = data.get("expected_device") or data.get("device", "")
    bad = {k: v for k in ("param_devices", "grad_devices", "optimizer_state_devices")
           if (v := data.get(k)) and v != [device]}
    if data.get("expected_device") and data.get("device") != device:
        bad["trainer_device"] = [data.get("device")]
    if bad:
        f.append(Finding("PRB004", Severity.ERROR,
                         f"rank {rank} has tensors off its device {device}: {bad}",
                         "make each rank see only its GPU (CUDA_VISIBLE_DEVICES / torchrun)",
                         {"rank": rank, **bad}))
    want = spec.gpu_uuids.get(spec.rank_gpus.get(rank)) if spec.rank_gpus.get(rank) is not None \
        else None
    if want and data.get("uuid") and data["uuid"] != want:
        f.append(Finding("PRB004", Severity.ERROR,
                         f"rank {rank} trained on {data['uuid']}, not on GPU "
                         f"{spec.rank_gpus[rank]} ({want}) as planned",
                         "check CUDA_VISIBLE_DEVICES / --gpu_ids and CUDA_DEVICE_ORDER",
                         {"rank": rank}))
    if data.get("loss_finite") is False:
        f.append(Finding("PRB005", Severity.ERROR, f"rank {rank}'s loss is not finite "
                         f"({data.get('loss')})", "check bf16/fp16 support of the GPU",
                         {"rank": rank}))


def _judge_isolation(spec: ProbeSpec, result: ProbeResult, watch: GpuWatch | None) -> None:
    if watch is None or watch.error is not None:
        reason = watch.error if watch is not None else "the probe did not start"
        result.isolation = "not measurable"
        result.isolation_detail = f"isolation not measurable: {reason}"
        result.findings.append(Finding("PRB008", Severity.INFO, result.isolation_detail,
                                       "run the probe on the GPU node to prove isolation",
                                       {"reason": reason}))
        return
    if not spec.rank_gpus or all(g is None for g in spec.rank_gpus.values()):
        for (_pid, gpu), sample in watch.seen.items():
            result.peak_mib[gpu] = max(result.peak_mib.get(gpu, 0), sample.max_mib)
        result.isolation = "not measurable"
        result.isolation_detail = "isolation not judged: the plan names no GPU per rank"
        result.findings.append(Finding("PRB008", Severity.INFO, result.isolation_detail,
                                       "give the launch command so the layout is known",
                                       {"reason": "no planned GPUs"}))
        return
    pid_rank = {d.get("pid"): r for r, d in result.ranks.items()}
    violations = []
    for (pid, gpu), sample in sorted(watch.seen.items()):
        result.peak_mib[gpu] = max(result.peak_mib.get(gpu, 0), sample.max_mib)
        rank = pid_rank.get(pid)
        own = spec.rank_gpus.get(rank) if rank is not None else None
        if gpu == own:
            continue
        if gpu in spec.generation_gpus:
            role, where = "generation", "reserved for vLLM"
        elif gpu in spec.rank_gpus.values():
            role, where = "other rank's", "of another rank"
        else:
            role, where = "idle", "not in the plan"
        who = f"rank {rank}" if rank is not None else "a launcher process"
        violations.append(f"{who}, pid {pid}, held {gib(sample.max_mib)} on GPU {gpu} {where}")
        result.isolation_offenders.append({"rank": rank, "pid": pid, "gpu": gpu,
                                           "mib": sample.max_mib, "role": role})
    if violations:
        result.isolation = "violated"
        result.isolation_detail = "; ".join(violations)
        result.findings.append(Finding(
            "PRB003", Severity.ERROR, "isolation violated: " + result.isolation_detail,
            "make each training process see only its own GPU: torchrun --nproc_per_node N (or "
            "accelerate with --num_processes N --gpu_ids …), or CUDA_VISIBLE_DEVICES",
            {"samples": watch.samples, "offenders": result.isolation_offenders}))
    elif not result.ranks or any(d.get("step_s") is None for d in result.ranks.values()):
        result.isolation = "not proved"
        result.isolation_detail = (f"no probe process left its GPU while it ran ({watch.samples} "
                                   "NVML samples), but not every rank finished a GRPO step")
    else:
        result.isolation = "proved"
        own = set(spec.rank_gpus.values())
        untouched = [g for g in spec.generation_gpus if g not in own]
        who = "no training process" if spec.use_vllm else "no probe process"
        result.isolation_detail = (f"{who} touched GPU {', '.join(map(str, untouched))}"
                                   if untouched else "each rank stayed on its own GPU") + \
            f" ({watch.samples} NVML samples)"
