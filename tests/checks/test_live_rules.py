"""Rules that touch the network (loopback only) or need the curated knowledge tables."""

from __future__ import annotations

import http.server
import json
import socket
import threading

import pytest

from tests.conftest import MODERN, findings, snapshot


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's API
        if self.path.startswith("/health"):
            body = json.dumps({"status": "ok"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(404)
            self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def _live(snap):
    snap = dict(snap)
    return snap


def _server_findings(port, network=True, **cfg):
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.plan.build import build_plan

    facts = from_dict(snapshot(2), "x")
    facts.source = "live"  # these rules run only on a live machine
    plan = build_plan(config_dict={"use_vllm": True, "vllm_mode": "server",
                                   "vllm_server_host": "127.0.0.1", "vllm_server_port": port,
                                   **cfg},
                      launch="CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1 t.py",
                      live=False)
    return {f.rule: f for f in run_rules(Context(facts=facts, plan=plan, network=network),
                                         select=["LAY008", "LAY009"]).findings}


def test_server_health_ok_is_quiet(server):
    assert "LAY008" not in _server_findings(server)


def test_server_unreachable_fires():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    found = _server_findings(port)
    assert "LAY008" in found and f"127.0.0.1:{port}/health/" in found["LAY008"].message
    assert "trl vllm-serve" in found["LAY008"].fix


def test_no_network_skips_the_health_check():
    assert _server_findings(1, network=False) == {}


def test_group_port_busy_fires_and_quiet(server):
    assert "LAY009" in _server_findings(1, vllm_group_port=server)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert "LAY009" not in _server_findings(1, vllm_group_port=free)


def test_known_bad_combination_from_the_knowledge_table():
    from envdoctor.knowledge import knowledge

    entries = knowledge().vllm.get("known_bad", [])
    if not entries:
        pytest.skip("rules/knowledge/vllm.yaml has no known_bad entries")
    fired = 0
    for entry in entries:
        when = entry.get("when") or {}
        pkgs = dict(MODERN)
        ok = True
        for key, spec in when.items():
            if key in ("use_vllm", "vllm_mode") or key.startswith("config."):
                continue
            version = _version_in(spec)
            if version is None:
                ok = False
                break
            pkgs[key] = version
        if not ok:
            continue
        cfg = {"use_vllm": bool(when.get("use_vllm", True))}
        if "vllm_mode" in when:
            cfg["vllm_mode"] = when["vllm_mode"]
        got = {f.evidence.get("id") for f in findings(snapshot(2, packages=pkgs), config=cfg,
                                                      launch="torchrun --nproc_per_node 1 t.py")
               if f.rule == "PKG007"}
        fired += entry.get("id") in got
    assert fired >= 1


def _version_in(spec: str) -> str | None:
    """A version inside a simple specifier like '<0.7.2' or '>=0.14,<0.16'."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        s = SpecifierSet(str(spec))
    except InvalidSpecifier:
        return None
    for candidate in ("0.7.1", "0.7.2", "0.7.3", "0.8.5", "0.10.2", "0.11.0", "0.12.0", "0.14.0",
                      "0.15.2", "0.16.0", "0.18.0", "0.19.0", "1.0.0", "1.16.0", "2.5.1",
                      "2.6.0", "2.7.0", "2.8.0", "4.49.0", "4.51.0", "5.0.0"):
        if s.contains(candidate, prereleases=True):
            return candidate
    return None
