"""A timeline of one `trl vllm-serve` start as the probe starts it: every output line stamped
with the seconds since the process began (issue #38 item 5: where the probe server's 76-82 s go
when its caches are private and cold).

    python3 docs/validation/server_timeline_gpu.py OUT_DIR GPU NAME CACHE_DIR [ENV=VALUE ...]

CACHE_DIR stands for the probe's private folder: every cache variable the probe sets
(``envdoctor.probe.stage.staging.private_dirs``) points under it, so a fresh folder is a cold
start and a folder an earlier start filled is a warm one. vLLM logs at DEBUG. Writes
OUT_DIR/timeline-NAME.log and prints the seconds to /health with the lines that mark each stage.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_start_gpu import MODEL, free_port, healthy_after, make_model  # noqa: E402

from envdoctor.probe.stage.staging import kernel_cache_reads, private_dirs  # noqa: E402

MARKS = re.compile(
    r"Started engine process|Initializing a V1 LLM engine|world_size|Loading model|Model loading took|"
    r"Loading weights took|profil|KV cache|Available KV|graph|init engine|Autotun|flashinfer|JIT|"
    r"compil|Starting vLLM API|Application startup|Waiting for|Started server process|took",
    re.I,
)


def main() -> None:
    out, gpu, name, cache, *pairs = sys.argv[1:]
    make_model()
    tmp = Path(cache)
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, **private_dirs(tmp), "CUDA_VISIBLE_DEVICES": gpu, "VLLM_LOGGING_LEVEL": "DEBUG"}
    extra = dict(p.split("=", 1) for p in pairs)
    if extra.pop("READ_THROUGH", None):  # the user's Triton kernels read, as the probe reads them
        env.update(kernel_cache_reads(tmp, dict(os.environ)))
    env.update(extra)
    argv = [
        "trl",
        "vllm-serve",
        "--model",
        str(MODEL),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--gpu_memory_utilization",
        "0.3",
        "--enforce_eager",
        "true",
        "--max_model_len",
        "2048",
    ]
    log = Path(out) / f"timeline-{name}.log"
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    lines: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.append(f"[{time.monotonic() - t0:7.2f}] {raw.decode(errors='replace').rstrip()}")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    healthy = healthy_after(proc, port, t0, 300, 0.1)
    reader.join(5)
    log.write_text("\n".join(lines) + "\n")
    said = f"{healthy:.1f} s" if healthy is not None else f"never (exit {proc.returncode})"
    print(f"[{name}] GPU {gpu} cache {cache} {' '.join(pairs) or ''}: /health after {said}")
    for line in lines:
        if MARKS.search(line):
            print(f"    {line[:200]}")


if __name__ == "__main__":
    main()
