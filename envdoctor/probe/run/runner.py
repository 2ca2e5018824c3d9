"""Launch the probe like the user would, watch it, and leave nothing behind: the lifecycle.

The launcher runs in its own process group (``start_new_session``); a wall-clock limit, Ctrl-C
or SIGTERM ends the whole group (SIGTERM, then SIGKILL after a grace period). One ExitStack owns
everything the probe takes: its temporary directory (spec, logs, rank results, any output), the
model writer, the probe server, the launcher's process group and the NVML watches. It ends them
in one place, newest first, whether the probe passed, failed, hung, crashed or was interrupted;
the temporary directory goes last. What was observed is then judged (judge, vllm_judge,
sync_judge).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from envdoctor.net_policy import LOOPBACK
from envdoctor.probe.interface import ProbeResult, ProbeSpec
from envdoctor.probe.judge.failures import SYNC_FATAL
from envdoctor.probe.judge.sync_judge import judge_sync
from envdoctor.probe.judge.trainer import (
    judge_isolation,
    judge_run,
    multi_node,
    not_started,
    not_written,
    rendezvous_moved,
)
from envdoctor.probe.judge.user_judge import judge_user
from envdoctor.probe.judge.vllm_judge import judge_vllm
from envdoctor.probe.observe.watcher import GpuWatch
from envdoctor.probe.plan.rendezvous import job_node, one_node
from envdoctor.probe.plan.tinymodel import config as generic_config
from envdoctor.probe.plan.vllm_engine import engine_settings
from envdoctor.probe.stage.groups import end_group
from envdoctor.probe.stage.server import SHIM, ServerLine, ServerProcess, read_tail, shim_python
from envdoctor.probe.stage.staging import (
    NO_DNS_NOTICE,
    OFFLINE,
    ProbeModelFiles,
    after_user_server,
    free_port,
    kernel_cache_reads,
    loopback_env,
    prepare_vllm,
    private_dirs,
    python_of,
)
from envdoctor.probe.stage.warm import WARM_WAIT_S, VllmWarmer

__all__ = [
    "GRACE_S",
    "OFFLINE",
    "WORKER",
    "ProbeResult",
    "ProbeSpec",
    "free_port",
    "private_dirs",
    "run_probe",
]

WORKER = Path(__file__).with_name("worker.py")
GRACE_S = 5.0
_judge, _judge_isolation = judge_run, judge_isolation  # the names the probe tests call


def run_probe(spec: ProbeSpec, on_phase: Callable[[str], None] | None = None) -> ProbeResult:
    """Run the probe described by ``spec``; never raises for what the probe does."""
    result = ProbeResult(status="error", t_start=time.time())
    if spec.multi_node:  # said at once, nothing launched
        result.status, result.phase = "not run", "not launched"
        result.findings.append(multi_node(spec))
        result.temp_dir_removed = True
        result.t_end = time.time()
        return result
    with contextlib.ExitStack() as stack:
        run = _Run(spec, result, on_phase, stack)
        try:
            with _sigterm_as_interrupt():
                run.go()
        except KeyboardInterrupt:
            result.status = "interrupted"
        except OSError as exc:  # its temp dir (model, spec, logs) could not be written
            result.findings.append(not_written(str(run.tmp), exc))
        finally:
            with _shielded():  # a second Ctrl-C or a SIGTERM must not cut the teardown short
                stack.close()
    if run.not_started:
        return result
    judge_run(spec, result, run.watch)
    judge_vllm(spec, result, run.server_watch)
    judge_sync(spec, result)
    judge_user(spec, result)
    return result


class _Run:
    """One run of the probe: each resource is handed to ``stack`` the moment it exists, with
    what ends it, so that closing the stack is the whole teardown."""

    def __init__(
        self,
        spec: ProbeSpec,
        result: ProbeResult,
        on_phase: Callable[[str], None] | None,
        stack: contextlib.ExitStack,
    ) -> None:
        self.spec, self.result, self.on_phase, self.stack = spec, result, on_phase, stack
        self.start = time.monotonic()
        self.mark = _marker(result, self.start)
        self.watch: GpuWatch | None = None  # the launcher's group on the GPUs
        self.server_watch: GpuWatch | None = None  # the probe server's group
        self.not_started = False  # a process could not be started: nothing to judge
        self._announced = False
        self.tmp = stack.enter_context(_temp_dir(result))
        stack.callback(self._close_watches)  # after the last look
        stack.callback(self._last_look)  # after every process ended

    def go(self) -> None:
        """Stage, start the server (if any) and the launcher, and wait for the launcher."""
        spec, result, tmp, mark = self.spec, self.result, self.tmp, self.mark
        files = ProbeModelFiles(spec, tmp, result, mark)
        self.stack.callback(files.stop)
        warmer = self._start_warmer()  # first: in server mode files.start() waits for the weights
        files.start()
        fallback = str(tmp / "generic") if files.pending else None
        vllm_spec, server_line = prepare_vllm(spec, tmp, result, files.model_dir, files.faithful, fallback)
        worker_spec = {
            "model_dir": files.model_dir,
            "model_faithful": files.faithful,
            "model_ready": str(files.ready) if files.pending else None,
            "out_dir": str(tmp),
            "steps": spec.steps,
            "model_family": spec.model_family,
            "bf16": spec.bf16,
            "fp16": spec.fp16,
            "gradient_checkpointing": spec.gradient_checkpointing,
            "peft": spec.peft,
            "num_generations": spec.num_generations,
            "per_device_train_batch_size": spec.per_device_train_batch_size,
            "gradient_accumulation_steps": spec.gradient_accumulation_steps,
            "use_vllm": vllm_spec is not None,
            "vllm_mode": spec.vllm_mode if vllm_spec is not None and spec.vllm_mode != "legacy" else None,
            **(vllm_spec or {}),
            "expected_device": {str(r): "cpu" for r, g in spec.rank_gpus.items() if g is None},
            "user_data": spec.user_data,
            "user_rewards": spec.user_rewards,
            "fault": spec.fault,
            "fault_at": spec.fault_at,
        }
        (tmp / "spec.json").write_text(json.dumps(worker_spec))
        user_env = {**os.environ, **spec.env}
        env = {**user_env, **OFFLINE, **private_dirs(tmp), **kernel_cache_reads(tmp, user_env)}
        if spec.job_rendezvous:  # one node of a job: its ranks meet the other nodes' there
            launcher, rdzv_env, moved = job_node(spec.launcher, env)
        else:
            launcher, rdzv_env, moved = one_node(spec.launcher, env)
        loopback_env(env, rdzv_env, spec)
        if moved:
            result.rendezvous_moved = moved
            result.findings.append(rendezvous_moved(moved))
        server = None
        if server_line is not None:  # first: its start overlaps the trainer's imports
            server = self._start_server(server_line, env, files, warmer)
            if server is None:
                return
        argv = launcher + [str(WORKER), str(tmp / "spec.json")]
        result.argv = list(argv)
        log = tmp / "probe.log"
        log_fh = self.stack.enter_context(log.open("wb"))
        mark("trainer_start")
        try:
            proc = subprocess.Popen(
                argv,
                env=env,
                cwd=tmp,
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            result.findings.append(
                not_started(
                    "the launcher",
                    argv,
                    exc,
                    "install it, or give the launch command with the full path of the launcher",
                )
            )
            self.not_started = True
            return
        self.stack.callback(self._end_trainer, proc)
        self.stack.callback(self._announce_teardown)
        self.watch = GpuWatch(pgid=proc.pid).start()

        def tick() -> None:
            files.poll()
            if warmer is not None and warmer.ended_at is None and warmer.poll():
                mark("vllm_warm_done")

        result.status = _wait(proc, log, spec.timeout_s, result, self.on_phase, server, mark, tick)
        mark("trainer_end")
        result.returncode = proc.returncode

    def _start_warmer(self) -> VllmWarmer | None:
        """vLLM's model-info inspection of the probe model's architecture (and the generic
        model's, its fallback), done in the background by the interpreter that will run vLLM,
        into the probe's cache root: vLLM would otherwise do it in a new process at its start."""
        spec = self.spec
        if not spec.use_vllm:
            return None
        if spec.vllm_mode == "server":
            if spec.server_launch is None:
                return None
            python, env = shim_python(spec.server_launch), {**os.environ, **spec.server_launch.env}
        else:
            python, env = python_of(spec.launcher), {**os.environ, **spec.env}
        arches = [str(a) for a in (spec.model.summary.get("architecture") if spec.model else None,) if a]
        arches += [a for a in generic_config()["architectures"] if a not in arches]
        if python is None:
            return None
        try:
            warmer = VllmWarmer(python, arches, {**env, **OFFLINE, **private_dirs(self.tmp)}, self.tmp)
        except OSError:
            return None  # vLLM does the inspection itself, as without the probe
        self.stack.callback(self._end_warmer, warmer)
        self.mark("vllm_warm_start")
        return warmer

    def _end_warmer(self, warmer: VllmWarmer) -> None:
        warmer.stop()
        report = warmer.report()
        if report and self.result.vllm:  # probe.vllm: only where vLLM was probed
            self.result.vllm["prepared"] = {
                "model_info": report.get("architectures") or report.get("error") or report,
                "seconds": report.get("seconds"),
            }

    @staticmethod
    def _after_warmer(warmer: VllmWarmer | None) -> list[str]:
        """The shim's ``--after`` for a model-class inspection still running: the server line
        starts once it is done, or at the latest ``WARM_WAIT_S`` after it began."""
        if warmer is None or warmer.poll():
            return []
        deadline = time.time() + max(WARM_WAIT_S - (time.monotonic() - warmer.start), 0.0)
        return ["--after", str(warmer.out), f"{deadline:.3f}"]

    def _start_server(
        self, line: ServerLine, env: dict[str, str], files: ProbeModelFiles, warmer: VllmWarmer | None = None
    ) -> ServerProcess | None:
        """The probe's vLLM server, started and held by the stack (None: it could not start).
        While the user's shape is still being written, the line starts through the shim, which
        does its imports meanwhile and runs it once the model is there (the generic model's
        line if the writer failed)."""
        line.env.update({**OFFLINE, **private_dirs(self.tmp), **kernel_cache_reads(self.tmp, line.env)})
        argv = None
        python = shim_python(self.spec.server_launch) if self.spec.server_launch else None
        after = self._after_warmer(warmer)
        early = files.pending and line.fallback is not None and python is not None
        if early and line.fallback is not None and python is not None:
            fallback = self.tmp / "server-fallback.json"
            fallback.write_text(json.dumps(line.fallback.argv))
            argv = [python, str(SHIM), str(files.ready), str(fallback), *after, "--", *line.argv]
            self.stack.callback(self._server_line_ran, line, files)
        elif after and python is not None:  # the model is there: the line waits only for the cache
            ready = self.tmp / "server.ready.json"
            ready.write_text(json.dumps({"faithful": True}))
            argv = [python, str(SHIM), str(ready), str(ready), *after, "--", *line.argv]
        loopback_env(line.env, {"MASTER_ADDR": LOOPBACK}, self.spec)
        for e in (env, line.env):  # NCCL names a refused group only so
            e.setdefault("NCCL_DEBUG", "WARN")
        self.mark("server_start")
        try:
            server = ServerProcess(line, self.tmp / "server.log", self.tmp, argv)
        except OSError as exc:
            self.result.findings.append(
                not_started(
                    "the vLLM server",
                    line.argv,
                    exc,
                    "install vLLM / TRL there, or give the server line with the launcher's full path",
                )
            )
            self.not_started = True
            return None
        self.stack.callback(self._end_server, server)
        self.stack.callback(self._announce_teardown)
        self.result.server.update(pid=server.pid, argv=line.argv, url=line.url)
        self.result.server["started_before_weights"] = early
        self.result.server["waited_for_inspection"] = bool(after) and argv is not None
        self.server_watch = GpuWatch(pgid=server.pid).start()
        return server

    def _server_line_ran(self, line: ServerLine, files: ProbeModelFiles) -> None:
        generic = line.fallback
        if generic is not None and files.model_dir is not None and not files.faithful:
            self.result.server["argv"] = generic.argv  # the shim ran the generic model's line
            self.result.vllm = engine_settings(self.spec, {}, False, generic)

    def _announce_teardown(self) -> None:
        if self.on_phase and not self._announced:
            self._announced = True
            self.on_phase("teardown")

    def _end_trainer(self, proc: subprocess.Popen) -> None:
        """End the launcher's group, then any of its pids still on a GPU."""
        self.mark("trainer_end", first=True)
        self._leftover(end_group(proc, GRACE_S))
        self._stop_watch(self.watch)

    def _end_server(self, server: ServerProcess) -> None:
        """End the probe server's group (its log kept for the judge), then its GPU holders."""
        srv = self.result.server
        srv["exit_code"] = server.exited()
        self._leftover(server.stop(GRACE_S))
        srv["log"] = server.log_text()
        srv["log_tail"] = _tail(srv["log"], 40)
        self._stop_watch(self.server_watch)

    def _stop_watch(self, watch: GpuWatch | None) -> None:
        if watch is not None:
            watch.stop()
            _end_gpu_holders(watch, self.result)

    def _leftover(self, pids: list[int]) -> None:
        self.result.leftover_pids = sorted(set(self.result.leftover_pids) | set(pids))

    def _last_look(self) -> None:
        """Once every process ended: who else holds the GPUs, the user's server, the timings,
        and what the ranks left in the temp dir."""
        spec, result = self.spec, self.result
        live = next((w for w in (self.server_watch, self.watch) if w is not None and w.error is None), None)
        if live is not None and spec.use_vllm:
            result.holders = live.others(set())  # who else holds each GPU, for findings
        after_user_server(spec, result, self.watch or self.server_watch)
        self.mark("end")
        result.wall_s = round(time.monotonic() - self.start, 3)
        result.t_end = time.time()
        _collect(self.tmp, result)

    def _close_watches(self) -> None:
        for w in (self.watch, self.server_watch):
            if w is not None:
                w.close()


@contextlib.contextmanager
def _temp_dir(result: ProbeResult) -> Iterator[Path]:
    """The probe's temporary directory, removed on the way out whatever happened."""
    tmp = Path(tempfile.mkdtemp(prefix="envdoctor-probe-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        result.temp_dir_removed = not tmp.exists()


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
_NEXT = {
    "launching": "launching",
    "started": "imports",
    "imports": "CUDA init",
    "cuda_init": "model build",
    "model_build": "the user's batch and rewards",
    "user_inputs": "trainer init",
    "trainer_init": "step",
    "steps": "checking",
    "sync_start": "weight sync",
    "sync_done": "step",
    "model_wait": "waiting for the probe model",
    "weight_sync_proof": "checking",
}


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


def _marker(result: ProbeResult, start: float) -> Callable[..., None]:
    def mark(name: str, first: bool = False) -> None:
        if first and name in result.events:
            return
        result.events[name] = round(time.monotonic() - start, 3)

    return mark


def _tail(text: str, lines: int) -> str:
    return "\n".join([line for line in text.splitlines() if NO_DNS_NOTICE not in line][-lines:])


def _wait(
    proc: subprocess.Popen,
    log: Path,
    timeout_s: float,
    result: ProbeResult,
    on_phase: Callable[[str], None] | None,
    server: ServerProcess | None = None,
    mark: Callable[..., None] | None = None,
    tick: Callable[[], None] | None = None,
) -> str:
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
                fatal = SYNC_FATAL.search(server.log_text(65536)) or SYNC_FATAL.search(read_tail(log))
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
            shown = (
                "server starting" if server.healthy_at is None else "server ready"
            ) + f" · trainer: {phase}"
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


def _collect(tmp: Path, result: ProbeResult) -> None:
    """What the ranks left in the temp dir (started and finished results) and the log's tail."""
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
    lines = [line for line in lines if not line.startswith("ENVDOCTOR_PHASE") and NO_DNS_NOTICE not in line]
    result.log_tail = "\n".join(lines[-40:])
