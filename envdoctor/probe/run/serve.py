"""The node of a multi-node job that runs the job's vLLM server (``vllm_server_host``): the probe
server on this node's address, held while the other nodes' ranks generate through it and sync
their weights to it, then ended and judged.

One ExitStack owns the temp dir, the model writer, the server's process group and its NVML
watch, as in the runner; ``until`` is called exactly once, whatever happens before it (the
job's collective that waits for the trainer nodes must be reached on every path).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from envdoctor.findings import Finding, Severity
from envdoctor.net_policy import LOOPBACK
from envdoctor.probe.interface import ProbeResult, ProbeSpec
from envdoctor.probe.judge.vllm_judge import judge_vllm
from envdoctor.probe.observe.watcher import GpuWatch
from envdoctor.probe.plan.rendezvous import job_node
from envdoctor.probe.run.runner import GRACE_S, _end_gpu_holders, _marker, _tail, _temp_dir
from envdoctor.probe.stage.server import ServerLine, ServerProcess
from envdoctor.probe.stage.staging import (
    OFFLINE,
    ProbeModelFiles,
    kernel_cache_reads,
    prepare_vllm,
    private_dirs,
)


def _bind(line: ServerLine, host: str) -> None:
    """Serve on ``host`` (this node's address: where the job says the server is)."""
    argv = line.argv
    for i, tok in enumerate(argv[:-1]):
        if tok == "--host":
            argv[i + 1] = host


def serve_probe(
    spec: ProbeSpec,
    bind: tuple[str, int, int],
    until: Callable[[], Any],
    node_addr: str | None = None,
) -> ProbeResult:
    """Run the probe server at ``bind`` (address, port, group port) until ``until()`` returns;
    never raises for what the server does."""
    result = ProbeResult(status="error", t_start=time.time())
    called = False

    def wait_for_trainers() -> None:
        nonlocal called
        if not called:
            called = True
            until()

    start = time.monotonic()
    mark = _marker(result, start)
    watch: GpuWatch | None = None
    try:
        with contextlib.ExitStack() as stack:
            tmp = stack.enter_context(_temp_dir(result))
            files = ProbeModelFiles(spec, tmp, result, mark)
            stack.callback(files.stop)
            files.start()
            deadline = time.monotonic() + max(spec.timeout_s / 2, 1.0)
            while files.pending and time.monotonic() < deadline:  # the server loads it at start
                files.poll()
                time.sleep(0.2)
            if files.pending:
                files.stop()
                files.poll()
            host, port, group_port = bind
            spec.remote_server = None
            _settings, line = prepare_vllm(spec, tmp, result, files.model_dir, files.faithful)
            if line is None:
                result.status = "not run"
                return result
            listen = host if host.startswith("127.") else "0.0.0.0"  # noqa: S104 - the job's server
            _bind(line, listen)
            for i, tok in enumerate(line.argv[:-1]):
                if tok == "--port":
                    line.argv[i + 1] = str(port)
            line.port, line.host = port, host if host.startswith("127.") else LOOPBACK
            _argv, outer, _moved = job_node(line.argv, line.env)
            for name in outer:  # the outer job's ranks are not the server's (vLLM reads some)
                line.env.pop(name, None)
            line.env.update({**OFFLINE, **private_dirs(tmp), **kernel_cache_reads(tmp, line.env)})
            line.env.setdefault("NCCL_DEBUG", "WARN")
            if node_addr:
                line.env.setdefault("VLLM_HOST_IP", node_addr)
            result.server.update(port=port, group_port=group_port, url=f"http://{host}:{port}")
            mark("server_start")
            try:
                server = ServerProcess(line, tmp / "server.log", tmp)
            except OSError as exc:
                result.findings.append(
                    _not_started(line.argv, exc)  # nothing to wait for: the trainers fail to connect
                )
                return result
            result.server.update(pid=server.pid, argv=line.argv)
            watch = GpuWatch(pgid=server.pid).start()
            stack.callback(watch.close)
            stop = threading.Event()

            def poll() -> None:
                while not stop.is_set() and server.exited() is None:
                    if server.check():
                        mark("server_healthy", first=True)
                        return
                    stop.wait(0.5)

            poller = threading.Thread(target=poll, name="envdoctor-server-health", daemon=True)
            poller.start()
            try:
                wait_for_trainers()
            finally:
                stop.set()
                poller.join(2.0)
                code = server.exited()
                if code is None and server.healthy_at is None and server.check():
                    mark("server_healthy", first=True)  # the trainers were faster than the last poll
                result.server["exit_code"] = code
                if code is not None:
                    result.server["died"] = code
                result.leftover_pids = server.stop(GRACE_S)
                result.server["log"] = server.log_text()
                result.server["log_tail"] = _tail(result.server["log"], 40)
                watch.stop()
                _end_gpu_holders(watch, result)
                mark("end")
            result.status = "pass" if server.healthy_at is not None and code is None else "fail"
            result.phase = "done" if server.healthy_at is not None else "server starting"
    finally:
        wait_for_trainers()
        result.wall_s = round(time.monotonic() - start, 3)
        result.t_end = time.time()
    judge_vllm(spec, result, watch)
    if result.status == "fail" and not any(f.severity is Severity.ERROR for f in result.findings):
        result.findings.append(_never_healthy(result))
    return result


def _not_started(argv: list[str], exc: OSError) -> Finding:
    from envdoctor.probe.judge.trainer import not_started

    return not_started(
        "the vLLM server",
        argv,
        exc,
        "install vLLM / TRL on the server node, or give the server line with the launcher's full path",
    )


def _never_healthy(result: ProbeResult) -> Finding:
    tail = [ln for ln in str(result.server.get("log_tail", "")).splitlines() if ln.strip()][-4:]
    return Finding(
        "PRB001",
        Severity.ERROR,
        "the probe vLLM server "
        + (
            f"exited with {result.server.get('died')}"
            if result.server.get("died") is not None
            else "never answered /health"
        )
        + " while the trainer nodes ran"
        + (": " + " | ".join(tail) if tail else ""),
        "read the server's log lines (-v); start the same line by hand on the server node",
        {"log_tail": result.server.get("log_tail", "")},
    )
