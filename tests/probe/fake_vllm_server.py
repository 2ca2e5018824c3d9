"""A stand-in for ``trl vllm-serve`` on CPU: serves GET /health on loopback, or fails the way vLLM
does. Behaviour from FAKE_VLLM (healthy | free_memory | flashinfer | hang | stubborn | duplicate);
FAKE_VLLM_RECORD names a folder where it writes its argv, pids and every request it got.

    python fake_vllm_server.py vllm-serve --model DIR --port P [...]
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

MODE = os.environ.get("FAKE_VLLM", "healthy")
RECORD = Path(os.environ.get("FAKE_VLLM_RECORD", "."))
FREE_MEMORY = (
    "(EngineCore pid=4711) ERROR 11-23 10:02:11 [core.py:1010] EngineCore failed to start.\n"
    "Traceback (most recent call last):\n"
    '  File "/tmp/vsite/vllm/v1/worker/utils.py", line 402, in request_memory\n'
    "    raise ValueError(\n"
    "ValueError: Free memory on device cuda:0 (28.77/139.8 GiB) on startup is less than desired "
    "GPU memory utilization (0.9, 125.82 GiB). Decrease GPU memory utilization or reduce GPU "
    "memory used by other processes.\n"
)
FLASHINFER = (
    "Traceback (most recent call last):\n"
    '  File "/tmp/vsite/vllm/v1/sample/ops/topk_topp_sampler.py", line 20, in <module>\n'
    "    import flashinfer.sampling\n"
    "ModuleNotFoundError: No module named 'flashinfer'\n"
)


def _arg(name: str, default: str) -> str:
    argv = sys.argv
    return argv[argv.index(name) + 1] if name in argv else default


class Handler(http.server.BaseHTTPRequestHandler):
    def _log(self) -> None:
        with open(RECORD / f"requests-{os.getpid()}.txt", "a") as fh:
            fh.write(f"{self.command} {self.path}\n")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._log()
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        self._log()
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    info = {
        "argv": sys.argv[1:],
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "env_cvd": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "env_rank": os.environ.get("RANK"),  # a job's rank variable (the job probe drops them)
        "weights": sorted(p.name for p in Path(_arg("--model", ".")).glob("*.safetensors")),
        "path0": sys.path[0],
    }
    if MODE == "stubborn":  # an engine child that ignores SIGTERM, like a stuck EngineCore
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
            ]
        )
        info["child"] = child.pid
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    (RECORD / f"server-{os.getpid()}.json").write_text(json.dumps(info))
    print("INFO starting the fake vLLM server", flush=True)
    if MODE == "free_memory":
        time.sleep(0.5)
        print(FREE_MEMORY, flush=True)
        sys.exit(1)
    if MODE == "flashinfer":
        print(FLASHINFER, flush=True)
        sys.exit(1)
    if MODE == "hang":
        time.sleep(600)
    time.sleep(float(os.environ.get("FAKE_VLLM_DELAY", "0.5")))
    if MODE == "duplicate":  # healthy, then NCCL refuses the weight-sync group (NCCL_DEBUG=WARN)
        import threading

        threading.Timer(
            1.0,
            lambda: print(
                "host:913:1201 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 "
                f"both on CUDA device 40 (NCCL_DEBUG={os.environ.get('NCCL_DEBUG')})",
                flush=True,
            ),
        ).start()
    server = http.server.HTTPServer((_arg("--host", "127.0.0.1"), int(_arg("--port", "8000"))), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
