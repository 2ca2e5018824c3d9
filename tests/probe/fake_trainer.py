"""A stand-in launcher for the probe's trainer on CPU (no vLLM here): takes ``worker.py SPEC``
like a real launcher, waits for the probe server's /health at the port the spec names (as TRL's
VLLMClient does), then writes the rank record a healthy step would. FAKE_TRAINER=hang: waits
forever after the server answered (a weight sync that never forms)."""

from __future__ import annotations

import http.client
import json
import os
import sys
import time
from pathlib import Path


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def main() -> None:
    spec = json.loads(Path(sys.argv[-1]).read_text())
    out, vllm = spec["out_dir"], spec.get("vllm", {})
    base = {"rank": 0, "pid": os.getpid(), "t_start": time.time(), "world_size": 1}
    Path(out, "rank0.started.json").write_text(json.dumps(base))
    print("ENVDOCTOR_PHASE rank=0 started", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    while not _healthy(int(vllm["vllm_server_port"])):
        time.sleep(0.1)
    print("ENVDOCTOR_PHASE rank=0 trainer_init", file=sys.stderr, flush=True)
    if os.environ.get("FAKE_TRAINER") == "hang":
        print("ENVDOCTOR_PHASE rank=0 sync_start", file=sys.stderr, flush=True)
        time.sleep(600)
    result = {
        **base,
        "ok": True,
        "finished": True,
        "step_s": 0.01,
        "loss": 0.0,
        "loss_finite": True,
        "device": "cpu",
        "n_gpu": 0,
        "wrapper": "Qwen2ForCausalLM",
        "data_parallel": False,
        "param_devices": ["cpu"],
        "grad_devices": ["cpu"],
        "optimizer_state_devices": ["cpu"],
        "sync_calls": 1,
        "spec_vllm": vllm,
        "phases": {"trainer_init": round(time.perf_counter() - t0, 3), "sync": 0.01, "steps": 0.02},
        "t_end": time.time(),
    }
    Path(out, "rank0.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
