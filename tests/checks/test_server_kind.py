"""LAY012 (issue 13 item 12, TRL issue #3587): the server must be the kind TRL's client needs."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from tests.conftest import MODERN, findings, snapshot

SERVER = {"use_vllm": True, "vllm_mode": "server"}
TRAIN = "CUDA_VISIBLE_DEVICES=0 python train.py"
NCCL = '--weight-transfer-config \'{"backend": "nccl"}\''


def _lay012(trl: str, server: str, vllm: str = "0.11.0") -> list:
    snap = snapshot(2, packages={**MODERN, "trl": trl, "vllm": vllm})
    return [f for f in findings(snap, config=SERVER, launch=f"{server} ; {TRAIN}") if f.rule == "LAY012"]


def test_plain_vllm_serve_with_a_trl_that_needs_its_own_server():
    (hit,) = _lay012(
        "0.19.0",
        "CUDA_VISIBLE_DEVICES=1 vllm serve Qwen/Q --tensor-parallel-size 1 "
        "--gpu-memory-utilization 0.8 --max-num-seqs 64",
    )
    assert hit.severity.value == "error" and "404" in hit.message and "3587" in hit.message
    assert hit.fix == (
        "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Q "
        "--tensor_parallel_size 1 --gpu_memory_utilization 0.8"
    )


def test_trl_vllm_serve_is_right_for_every_release():
    for trl in ("0.16.0", "0.19.0", "1.9.0", "1.10.0", "1.11.0", "1.16.0"):
        assert not _lay012(trl, "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model M", "0.26.0")


def test_vllm_serve_from_trl_111_needs_dev_mode_and_weight_transfer():
    (hit,) = _lay012("1.16.0", "CUDA_VISIBLE_DEVICES=1 vllm serve M", "0.26.0")
    assert hit.severity.value == "error" and "VLLM_SERVER_DEV_MODE=1" in hit.message
    assert hit.fix.startswith("VLLM_SERVER_DEV_MODE=1 CUDA_VISIBLE_DEVICES=1 vllm serve M")
    assert "--weight-transfer-config" in hit.fix
    good = (
        f"VLLM_SERVER_DEV_MODE=1 CUDA_VISIBLE_DEVICES=1 vllm serve M {NCCL} "
        "--logprobs-mode processed_logprobs"
    )
    assert not _lay012("1.16.0", good, "0.26.0")
    (soft,) = _lay012("1.16.0", good.replace(" --logprobs-mode processed_logprobs", ""), "0.26.0")
    assert soft.severity.value == "warning" and "logprobs-mode" in soft.message


class _Server(http.server.BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, bytes]] = {}

    def do_GET(self):  # noqa: N802 - http.server's API
        code, body = self.routes.get(self.path, (404, b""))
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802 - a POST would change the server: fail loudly
        raise AssertionError("envdoctor must only GET")

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    started = []

    def start(routes: dict[str, tuple[int, bytes]]) -> int:
        handler = type("H", (_Server,), {"routes": routes})
        srv = http.server.HTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        started.append(srv)
        return srv.server_address[1]

    yield start
    for srv in started:
        srv.shutdown()
        srv.server_close()


def _live(trl: str, port: int) -> list:
    facts = from_dict(snapshot(2, packages={**MODERN, "trl": trl, "vllm": "0.26.0"}), "x")
    facts.source = "live"
    plan = build_plan(
        config_dict={**SERVER, "vllm_server_host": "127.0.0.1", "vllm_server_port": port},
        launch=TRAIN,
        live=False,
    )
    return run_rules(Context(facts=facts, plan=plan, network=True), select=["LAY012"]).findings


def test_live_plain_vllm_server_is_caught_by_a_get(serve):
    ok = {"/health": (200, b""), "/health/": (200, b"")}
    (hit,) = _live("1.9.0", serve(ok))
    assert "GET /get_world_size/" in hit.message and "404" in hit.message
    trl_server = {
        "/health/": (200, json.dumps({"status": "ok"}).encode()),
        "/get_world_size/": (200, b'{"world_size": 1}'),
    }
    assert not _live("1.9.0", serve(trl_server))


def test_live_vllm_server_without_dev_mode_or_weight_transfer(serve):
    up = {"/health": (200, b""), "/health/": (200, b"")}  # FastAPI redirects /health/ there
    assert _live("1.16.0", serve(up))  # no dev-mode routes: 404
    info = {"vllm_config": {"weight_transfer_config": None}}
    routes = {
        **up,
        "/get_world_size": (200, b'{"world_size": 1}'),
        "/server_info?config_format=json": (200, json.dumps(info).encode()),
    }
    (hit,) = _live("1.16.0", serve(routes))
    assert "weight-transfer" in hit.message
    info["vllm_config"]["weight_transfer_config"] = {"backend": "nccl"}
    routes["/server_info?config_format=json"] = (200, json.dumps(info).encode())
    assert not _live("1.16.0", serve(routes))


def test_vllm_openai_server_module_is_the_same_server_as_vllm_serve():
    """`python -m vllm.entrypoints.openai.api_server` runs what `vllm serve` runs: vLLM's own
    server, which TRL 0.19's client cannot talk to (LAY012, fixed to trl vllm-serve)."""
    (hit,) = _lay012(
        "0.19.0",
        "CUDA_VISIBLE_DEVICES=1 python -m vllm.entrypoints.openai.api_server --model Qwen/Q --port 8000",
    )
    assert hit.severity.value == "error"
    assert hit.fix.startswith("CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Q")
    assert not _lay012("0.19.0", "CUDA_VISIBLE_DEVICES=1 python -m trl.scripts.vllm_serve --model Qwen/Q")


def test_trls_server_script_run_by_path_or_module_is_a_server():
    # verifiers (d7e1c2e) runs its copy of TRL's vllm_serve.py with python: TRL's server and its
    # options, not a training process that sees GPUs 0-3 (gate13)
    from envdoctor.plan.launch import parse_launches

    for line in (
        "CUDA_VISIBLE_DEVICES=0,1,2,3 python verifiers/inference/vllm_serve.py "
        "--model Qwen/Qwen2.5-7B-Instruct --tensor_parallel_size 4",
        "python -m trl.scripts.vllm_serve --model Qwen/Qwen2.5-7B-Instruct --tensor_parallel_size 4",
    ):
        (lx,) = parse_launches(line)
        assert lx.is_server and lx.launcher == "trl-vllm-serve"
        assert lx.options["tensor_parallel_size"] == 4
    (lx,) = parse_launches("python train_vllm_serve_client.py")
    assert not lx.is_server
