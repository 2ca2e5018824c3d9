"""Where a `trl vllm-serve` start goes, as the probe starts it (issue #38 item 5: the server split
probe's wall time on H200s is mostly the probe server's start).

    python3 docs/validation/server_start_gpu.py OUT_DIR GPU NAME [ENV=VALUE ...]

Writes a Qwen2.5-0.5B-shaped model with 2 of its 24 layers (random weights, a byte-level
tokenizer trained on a few words: nothing downloaded) once into /tmp/server-start-model, starts
`trl vllm-serve` on that GPU as the probe does (loopback, a free port, eager, 0.3), polls
/health, and prints the seconds to /health and vLLM's own timed lines; the server's whole log
goes to OUT_DIR/server-start-NAME.log. Extra ENV=VALUE pairs are set for the server only.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

MODEL = Path("/tmp/server-start-model")
TIMED = re.compile(
    r"took|torch\.compile|Dynamo|Compiling|Starting vLLM|Application startup|JIT|flashinfer", re.I
)


def make_model() -> None:
    if (MODEL / "config.json").exists():
        return
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(["the quick brown fox jumps over the lazy dog 0123456789"] * 20, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.save_pretrained(MODEL)
    cfg = Qwen2Config(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=2, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768,
        tie_word_embeddings=True, eos_token_id=0, bos_token_id=0, pad_token_id=0,
    )  # fmt: skip
    Qwen2ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(MODEL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy_after(
    proc: subprocess.Popen, port: int, t0: float, limit_s: float, every_s: float
) -> float | None:
    """Seconds from ``t0`` to the server's first /health 200 (None: it exited or ``limit_s``
    passed); the server's process group is ended either way."""
    healthy = None
    while time.monotonic() - t0 < limit_s and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=0.5) as r:
                if r.status == 200:
                    healthy = time.monotonic() - t0
                    break
        except OSError:
            pass
        time.sleep(every_s)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    return healthy


def main() -> None:
    out, gpu, name, *pairs = sys.argv[1:]
    make_model()
    port = free_port()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu, **dict(p.split("=", 1) for p in pairs)}
    argv = ["trl", "vllm-serve", "--model", str(MODEL), "--host", "127.0.0.1", "--port", str(port),
            "--gpu_memory_utilization", "0.3", "--enforce_eager", "true"]  # fmt: skip
    log = Path(out) / f"server-start-{name}.log"
    t0 = time.monotonic()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        healthy = healthy_after(proc, port, t0, 240, 0.25)
    said = f"{healthy:.1f} s" if healthy is not None else f"never (exit {proc.returncode})"
    print(f"[{name}] GPU {gpu} {' '.join(pairs) or '(no extra env)'}: /health after {said}")
    for line in log.read_text(errors="replace").splitlines():
        if TIMED.search(line):
            print(f"    {line[:220]}")


if __name__ == "__main__":
    main()
