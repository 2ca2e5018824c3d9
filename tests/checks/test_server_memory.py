"""MEM001 with a vLLM server (issue 13 item 1): the server line's own memory fraction, and a
server that is already up is not a stranger holding its GPU."""

from __future__ import annotations

import http.server
import threading

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from tests.conftest import findings, snapshot

H200 = {"name": "NVIDIA H200", "memory_total_mib": 143771, "compute_capability": "9.0"}
STACK = {
    "trl": "1.16.0",
    "transformers": "5.23.0",
    "torch": "2.11.0+cu130",
    "accelerate": "1.15.0",
    "vllm": "0.26.0",
}
SERVER_CFG = {"use_vllm": True, "vllm_mode": "server"}
ENGINE = {"pid": 4242, "name": "VLLM::EngineCore", "used_mib": 44544}
TRAIN = "CUDA_VISIBLE_DEVICES=0 python3 train.py"


def _snap(used: int = 0, procs: list | None = None) -> dict:
    return snapshot(
        2, model=H200, packages=STACK, driver_cuda="13.0", used={1: used}, processes={1: procs or []}
    )


def _mem001(snap: dict, server: str, config: dict | None = None) -> list:
    return [
        f
        for f in findings(snap, config=config or SERVER_CFG, launch=f"{server} ; {TRAIN}")
        if f.rule == "MEM001"
    ]


def test_running_server_is_info_not_a_stranger():
    """The field case: trl vllm-serve at 0.3 up on GPU 1 (NVML: VLLM::EngineCore, 43.5 GiB)."""
    server = "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model M --gpu_memory_utilization 0.3"
    (found,) = _mem001(_snap(44544, [ENGINE]), server)
    assert found.severity.value == "info" and "already up on GPU 1" in found.message
    assert "VLLM::EngineCore" in found.message


@pytest.mark.parametrize(
    "flag", ["--gpu_memory_utilization 0.3", "--gpu-memory-utilization 0.3", "--gpu-memory-utilization=0.3"]
)
def test_server_line_fraction_is_read_in_both_spellings(flag):
    stranger = [{"pid": 77, "name": "python other_job.py", "used_mib": 112640}]
    server = f"CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model M {flag}"
    (found,) = _mem001(_snap(112640, stranger), server)
    assert found.severity.value == "error" and "0.3 × 143771" in found.message
    assert "server line" in found.message and flag.replace("0.3", "0.19") in found.fix
    assert not _mem001(_snap(112640, stranger), server.replace("0.3", "0.2"))


def test_the_config_key_does_not_size_a_server():
    """vllm_gpu_memory_utilization is not read by a server: its line (or default) is."""
    server = "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model M"
    busy = _snap(30000, [{"pid": 77, "name": "python x.py", "used_mib": 30000}])
    (found,) = _mem001(busy, server, {**SERVER_CFG, "vllm_gpu_memory_utilization": 0.3})
    assert "trl vllm-serve's default 0.9" in found.message


def test_plain_vllm_serve_default_follows_the_vllm_release():
    server = "CUDA_VISIBLE_DEVICES=1 vllm serve M"
    # 131000 MiB free: enough for 0.9 (129393 MiB), not for vLLM 0.26's 0.92 (132269 MiB)
    between = _snap(143771 - 131000, [{"pid": 77, "name": "python x.py", "used_mib": 12771}])
    (found,) = _mem001(between, server)
    assert "vLLM 0.26.0's default 0.92" in found.message
    older = from_dict(between, "x")
    older.packages["vllm"].version = "0.6.4"
    plan = build_plan(launch=f"{server} ; {TRAIN}", config_dict=SERVER_CFG, live=False)
    assert "MEM001" not in {f.rule for f in run_rules(Context(facts=older, plan=plan)).findings}


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's API
        self.send_response(200 if self.path.startswith("/health") else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def health_port():
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def _live(port: int) -> list:
    facts = from_dict(_snap(44544, [ENGINE]), "x")
    facts.source = "live"
    server = f"CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model M --port {port}"
    plan = build_plan(
        launch=f"{server} ; {TRAIN}",
        live=False,
        config_dict={**SERVER_CFG, "vllm_server_host": "127.0.0.1", "vllm_server_port": port},
    )
    return [f for f in run_rules(Context(facts=facts, plan=plan, network=True), select=["MEM001"]).findings]


def test_live_server_that_answers_is_info(health_port):
    (found,) = _live(health_port)
    assert found.severity.value == "info" and "answers at" in found.message


def test_live_vllm_process_without_a_server_answering_is_still_checked():
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing answers there
    (found,) = _live(port)
    assert found.severity.value == "error" and "no server answers" in found.message
