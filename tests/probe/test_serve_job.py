"""The server node of a multi-node job (``check --distributed --probe``, vllm_mode server): the
probe server on the node's own address, held until the trainer nodes are done, then ended; and
rank 0's choice of the node that serves. On CPU with the stand-in server (tests/probe/
fake_vllm_server.py): the trainers' side needs vLLM (docs/validation/multinode_probe_gpu.sh)."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from envdoctor.cluster.job_probe import assign, is_this_node
from envdoctor.probe.interface import ProbeSpec
from envdoctor.probe.run.serve import serve_probe
from tests.probe.leftovers import left_behind
from tests.probe.test_server import _fake_launch


def _free(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _get(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:  # noqa: S310 - loopback
            return resp.status
    except (urllib.error.URLError, OSError):
        return None


def _spec(record, monkeypatch, mode: str = "healthy") -> ProbeSpec:
    monkeypatch.setenv("FAKE_VLLM", mode)
    monkeypatch.setenv("FAKE_VLLM_RECORD", str(record))
    return ProbeSpec(
        launcher=["python"],
        timeout_s=30,
        use_vllm=True,
        vllm_mode="server",
        vllm={"vllm_group_port": 51216},
        server_launch=_fake_launch(
            "--model Qwen/Qwen2.5-7B --gpu_memory_utilization 0.3 --port 8000", {"CUDA_VISIBLE_DEVICES": "3"}
        ),
        server_visible=[3],
    )


def test_the_server_node_serves_on_its_address_until_the_trainers_are_done(tmp_path, probe_tmp, monkeypatch):
    record = tmp_path / "record"
    record.mkdir()
    port = _free("127.0.0.2")
    seen: list = []

    def trainers() -> None:  # what the trainer nodes see while they run: the server at 127.0.0.2
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _get(f"http://127.0.0.2:{port}/health") != 200:
            time.sleep(0.2)
        seen.append((_get(f"http://127.0.0.2:{port}/health"), _get(f"http://127.0.0.1:{port}/health")))

    monkeypatch.setenv("RANK", "1")  # the envdoctor rank of the job that runs the server
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job")
    r = serve_probe(_spec(record, monkeypatch), ("127.0.0.2", port, 51999), trainers, "127.0.0.2")
    assert seen == [(200, None)], r.server.get("log_tail")  # on the node's address only; once
    assert r.status == "pass" and r.phase == "done", r.findings
    assert r.server["port"] == port and r.server["group_port"] == 51999
    (info,) = [json.loads(p.read_text()) for p in record.glob("server-*.json")]
    argv = info["argv"]
    assert argv[argv.index("--host") + 1] == "127.0.0.2" and argv[argv.index("--port") + 1] == str(port)
    assert info["env_cvd"] == "3"  # the server line's own GPUs
    assert info["env_rank"] is None  # not the outer job's rank variables
    assert _get(f"http://127.0.0.2:{port}/health") is None  # ended
    assert r.temp_dir_removed and not left_behind(probe_tmp)


def test_a_server_that_dies_still_lets_the_trainers_finish_and_is_named(tmp_path, probe_tmp, monkeypatch):
    record = tmp_path / "record"
    record.mkdir()
    calls: list = []
    r = serve_probe(
        _spec(record, monkeypatch, "free_memory"),
        ("127.0.0.2", _free("127.0.0.2"), 51999),
        lambda: (time.sleep(3), calls.append(1)),
    )
    assert calls == [1]  # the collective that waits for the trainers is reached exactly once
    assert r.status == "fail"
    assert "PRB013" in {f.rule for f in r.findings}, [f.message for f in r.findings]
    assert r.temp_dir_removed and not left_behind(probe_tmp)


def test_a_server_line_that_cannot_start_still_reaches_the_collective(tmp_path, probe_tmp, monkeypatch):
    spec = _spec(tmp_path, monkeypatch)
    spec.server_launch.program = ["/nonexistent/trl", "vllm-serve"]
    calls: list = []
    r = serve_probe(spec, ("127.0.0.2", _free("127.0.0.2"), 51999), lambda: calls.append(1))
    assert calls == [1]
    assert r.status != "pass" and "PRB001" in {f.rule for f in r.findings}


def _role(node: int, addr: str, server: bool = False, host: str = "10.0.0.9") -> dict:
    role = {"node": node, "addr": addr, "port": 30000 + node, "local_world": 1, "server_host": host}
    if server:
        role.update(server=True, server_port=8000, group_port=51216)
    return role


def test_rank_0_assigns_the_named_node_to_serve_and_the_others_to_train():
    plan = assign([_role(0, "10.0.0.1"), _role(1, "10.0.0.9", True), _role(2, "10.0.0.3")], "10.0.0.1", 0)
    assert plan["server"] == {
        "node": 1,
        "addr": "10.0.0.9",
        "host": "10.0.0.9",
        "port": 8000,
        "group_port": 51216,
    }
    assert plan["trainers"] == [0, 2] and plan["rdzv"] == ("10.0.0.1", 30000) and plan["note"] is None
    # the server on rank 0's node: the training ranks meet at the first training node's address
    plan = assign([_role(0, "10.0.0.9", True), _role(1, "10.0.0.2")], "10.0.0.9", 0)
    assert plan["trainers"] == [1] and plan["rdzv"] == ("10.0.0.2", 30001)


@pytest.mark.parametrize(
    ("roles", "note"),
    [
        (
            [_role(0, "10.0.0.1"), _role(1, "10.0.0.2")],
            "vllm_server_host 10.0.0.9 is none of the job's nodes",
        ),
        ([_role(0, "10.0.0.9", True), _role(1, "10.0.0.9", True)], "names several nodes of the job (0, 1)"),
    ],
)
def test_no_single_server_node_is_said_and_every_node_trains(roles, note):
    plan = assign(roles, "10.0.0.1", 0)
    assert plan["server"] is None and plan["trainers"] == [0, 1] and note in plan["note"]


def test_a_node_knows_itself_by_its_given_address(monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_NODE_ADDR", "127.0.0.2")
    assert is_this_node("127.0.0.2") and not is_this_node("127.0.0.1")
    monkeypatch.delenv("ENVDOCTOR_NODE_ADDR")
    assert not is_this_node("127.0.0.1") and not is_this_node("0.0.0.0")  # names no one node
    assert is_this_node(socket.gethostname())
    assert not is_this_node("192.0.2.1")  # TEST-NET: an address no host here holds
