"""Rules that touch the network (loopback only) or need the curated knowledge tables.

The network policy itself (hosts not contacted, redirects, bodies, deadlines) is tested in a
network namespace of its own: tests/net/test_server_check.py."""

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
    plan = build_plan(
        config_dict={
            "use_vllm": True,
            "vllm_mode": "server",
            "vllm_server_host": "127.0.0.1",
            "vllm_server_port": port,
            **cfg,
        },
        launch="CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1 t.py",
        live=False,
    )
    return {
        f.rule: f
        for f in run_rules(
            Context(facts=facts, plan=plan, network=network), select=["LAY008", "LAY009", "LAY013"]
        ).findings
    }


def test_server_health_ok_is_quiet(server):
    assert "LAY008" not in _server_findings(server)


def test_server_unreachable_fires():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    found = _server_findings(port)
    assert "LAY008" in found and f"127.0.0.1:{port}/health" in found["LAY008"].message
    assert "trl vllm-serve" in found["LAY008"].fix


def test_no_network_skips_the_health_check():
    assert _server_findings(1, network=False) == {}


def test_server_not_contacted_fires_off_loopback_and_is_quiet_on_it(server):
    found = _server_findings(8000, vllm_server_host="169.254.169.254")  # refused: no packet
    assert set(found) == {"LAY013"} and found["LAY013"].severity.value == "info"
    assert "--allow-host 169.254.169.254" in found["LAY013"].fix
    assert "LAY013" not in _server_findings(server)


def test_group_port_busy_fires_and_quiet(server):
    assert "LAY009" in _server_findings(1, vllm_group_port=server)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert "LAY009" not in _server_findings(1, vllm_group_port=free)


def _known_bad_ids():
    from envdoctor.knowledge import knowledge

    return [e["id"] for e in knowledge().vllm.get("known_bad", [])]


@pytest.mark.parametrize("entry_id", _known_bad_ids())
def test_each_known_bad_entry_fires_and_its_healthy_neighbour_is_quiet(entry_id):
    from envdoctor.knowledge import knowledge

    entry = next(e for e in knowledge().vllm["known_bad"] if e["id"] == entry_id)
    rule = entry.get("rule", "PKG007")
    when = entry["when"]
    pkgs, env, cfg = dict(MODERN), {}, {"use_vllm": bool(when.get("use_vllm", True))}
    for key, spec in when.items():
        if key in ("use_vllm", "world_size_above"):
            continue
        if key == "vllm_mode":
            cfg["vllm_mode"] = spec
        elif key.startswith("config."):
            cfg[key[7:]] = spec
        elif key.startswith("env."):
            if "contains" in spec:  # {absent: true}: left unset
                env[key[4:]] = spec["contains"]
        else:
            pkgs[key] = _version_in(spec)
    if cfg.get("vllm_enable_sleep_mode"):
        cfg["vllm_mode"] = "colocate"
    ranks = int(when.get("world_size_above", 0)) + 1
    launch = f"torchrun --nproc_per_node {ranks} t.py"

    def fired(packages):
        return [
            f
            for f in findings(snapshot(ranks + 1, packages=packages, env=env), config=cfg, launch=launch)
            if f.rule == rule and (rule != "PKG007" or f.evidence.get("id") == entry_id)
        ]

    assert fired(pkgs), (entry_id, pkgs, env, cfg)
    healthy = dict(pkgs)
    fixed = (entry.get("fixed_in") or {}).get("vllm")
    healthy["vllm"] = fixed or "0.7.2"
    assert not fired(healthy)


def _version_in(spec: str) -> str | None:
    """A version inside a simple specifier like '<0.7.2' or '>=0.14,<0.16'."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        s = SpecifierSet(str(spec))
    except InvalidSpecifier:
        return None
    for candidate in (
        "0.7.0",
        "0.7.1",
        "0.7.2",
        "0.7.3",
        "0.8.5",
        "0.10.2",
        "0.11.0",
        "0.12.0",
        "0.14.0",
        "0.15.2",
        "0.16.0",
        "0.18.0",
        "0.19.0",
        "1.0.0",
        "1.16.0",
        "2.5.1",
        "2.6.0",
        "2.7.0",
        "2.8.0",
        "2.10.0",
        "4.49.0",
        "4.51.0",
        "5.0.0",
    ):
        if s.contains(candidate, prereleases=True):
            return candidate
    return None


def _sleep_alloc(torch: str, vllm: str, env: dict[str, str]) -> list[str]:
    snap = snapshot(2, packages={**MODERN, "torch": torch, "vllm": vllm, "trl": "0.26.2"}, env=env)
    cfg = {"use_vllm": True, "vllm_mode": "colocate", "vllm_enable_sleep_mode": True}
    return [
        str(f.evidence.get("id"))
        for f in findings(snap, config=cfg, launch="python t.py")
        if f.rule == "PKG007" and f.severity.value == "warning"
    ]


def test_pkg007_is_quiet_on_pytorch_alloc_conf_with_sleep_mode():
    """Measured (docs/validation/sleep-alloc-h200.md): torch 2.11 + vLLM 0.26 with only
    PYTORCH_ALLOC_CONF=expandable_segments:True passes TRL's colocate sleep-mode step (torch keeps
    expandable segments off a pool with its own allocator from 2.10, pytorch#169491); on torch 2.9
    the variable does not reach CUDA (a published 200-step run on torch 2.9.0 + vLLM 0.11.2)."""
    only_new = {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}
    assert _sleep_alloc("2.11.0", "0.26.0", only_new) == []
    assert _sleep_alloc("2.9.0", "0.11.2", only_new) == []


def test_vllm_0_7_3s_gather_hang_needs_more_than_one_training_process():
    # TRL 0.15's gather_object after vLLM generation hangs across processes (huggingface/trl#2952)
    pkgs = {**MODERN, "trl": "0.15.2", "vllm": "0.7.3", "torch": "2.5.1"}

    def ids(launch):
        found = findings(snapshot(3, packages=pkgs), config={"use_vllm": True}, launch=launch)
        return [f.evidence.get("id") for f in found if f.rule == "PKG007"]

    assert "vllm-0.7.3-gather-hang-trl-0.15" in ids("accelerate launch --num_processes 2 t.py")
    assert "vllm-0.7.3-gather-hang-trl-0.15" not in ids("python t.py")
