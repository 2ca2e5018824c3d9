"""A live check's contact with the configured vLLM server goes through the network policy:
loopback only unless a host is allowed, no name looked up, no redirect followed, no body
quoted, one deadline per request. Runs in a network namespace with only ``lo`` up (conftest)."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import MODERN, snapshot
from tests.net.helpers import reply, tcp_server

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY-canary"
LAUNCH = "CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1 t.py"


def live_check(
    cfg: dict, allow: tuple[str, ...] = (), trl: str = MODERN["trl"], rules=("LAY008", "LAY012", "LAY013")
) -> dict:
    """The server rules of a live check (a snapshot marked live) for ``cfg``: rule → finding."""
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.plan.build import build_plan

    facts = from_dict(snapshot(2, packages={**MODERN, "trl": trl}), "x")
    facts.source = "live"  # these rules run only on a live machine
    plan = build_plan(config_dict={"use_vllm": True, "vllm_mode": "server", **cfg}, launch=LAUNCH, live=False)
    ctx = Context(facts=facts, plan=plan, network=True, **({"allow_hosts": allow} if allow else {}))
    return {f.rule: f for f in run_rules(ctx, select=list(rules)).findings}


def _text(found: dict) -> str:
    return json.dumps({k: [f.message, f.fix, f.evidence] for k, f in found.items()}, default=str)


# --- hosts that are not contacted --------------------------------------------------------------

NOT_LOOPBACK = [
    {"vllm_server_host": "169.254.169.254"},  # cloud metadata
    {"vllm_server_host": "10.1.2.3"},
    {"vllm_server_host": "192.168.1.5"},
    {"vllm_server_host": "8.8.8.8"},
    {"vllm_server_host": "fd00::1"},
    {"vllm_server_host": "::ffff:169.254.169.254"},  # IPv4-mapped metadata
    {"vllm_server_host": "0251.0376.0251.0376"},  # octal spelling of the metadata IP
    {"vllm_server_host": "2852039166"},  # the metadata IP as one number
    {"vllm_server_host": "vllm.internal.example"},  # a DNS name: not even looked up
    {"vllm_server_host": "metadata.google.internal"},
    {"vllm_server_base_url": "http://169.254.169.254/latest/meta-data/iam/"},
    {"vllm_server_base_url": "http://vllm.internal.example:8000"},
]


@pytest.mark.parametrize("cfg", NOT_LOOPBACK, ids=lambda c: next(iter(c.values())))
def test_a_server_off_loopback_is_not_contacted_and_said_so(cfg, attempts):
    found = live_check({**cfg, "vllm_server_port": 8000})
    assert attempts.connects == [] and attempts.lookups == []
    assert "LAY008" not in found and "LAY012" not in found  # never an error from not asking
    f = found["LAY013"]
    assert f.severity.value == "info" and "was not contacted" in f.message
    assert "--allow-host" in f.fix or "http://HOST:PORT" in f.fix


@pytest.mark.parametrize(
    "base",
    [
        "http://127.0.0.1:{port}/latest/meta-data/?x=1",
        "http://127.0.0.1:{port}/?q=1",
        "http://user:pw@127.0.0.1:{port}",
        "http://127.0.0.1:{port}#frag",
    ],
)
def test_a_loopback_base_url_with_its_own_path_or_query_is_not_contacted(base, attempts):
    with tcp_server(reply("200 OK", b'{"status": "ok"}')) as (port, requests):
        found = live_check({"vllm_server_base_url": base.format(port=port)})
    assert attempts.connects == [] and requests == []
    assert "LAY008" not in found and found["LAY013"].severity.value == "info"
    assert "pw" not in found["LAY013"].message and "meta-data" not in found["LAY013"].message


def test_an_allowed_host_is_contacted_and_only_it(attempts):
    found = live_check({"vllm_server_host": "10.1.2.3", "vllm_server_port": 8000}, allow=("10.1.2.3",))
    assert [a[:2] for a in attempts.connects] == [("10.1.2.3", 8000)]
    assert attempts.lookups == []  # an IP is not looked up
    assert "LAY013" not in found and "connection failed" in found["LAY008"].message  # no route
    other = live_check({"vllm_server_host": "10.9.9.9", "vllm_server_port": 8000}, allow=("10.1.2.3",))
    assert "LAY013" in other and attempts.non_loopback() == [("10.1.2.3", 8000)]


def test_localhost_is_mapped_literally_never_looked_up(attempts):
    with tcp_server(reply("200 OK", b'{"status": "ok"}')) as (port, requests):
        found = live_check(
            {"vllm_server_host": "localhost", "vllm_server_port": port}, rules=("LAY008", "LAY013")
        )
        bound_all = live_check(
            {"vllm_server_host": "0.0.0.0", "vllm_server_port": port}, rules=("LAY008", "LAY013")
        )
    assert found == {} == bound_all and attempts.lookups == []
    assert attempts.connects and not attempts.non_loopback() and len(requests) == 2


# --- loopback servers that misbehave -----------------------------------------------------------


def test_a_redirect_to_the_metadata_service_is_not_followed(attempts):
    to_metadata = {"Location": "http://169.254.169.254/latest/meta-data/iam/security-credentials/"}
    with tcp_server(reply("302 Found", headers=to_metadata)) as (port, requests):
        found = live_check({"vllm_server_host": "127.0.0.1", "vllm_server_port": port})
    assert not attempts.non_loopback() and attempts.lookups == []
    paths = [r.split(b" ")[1] for r in requests]
    assert paths == [b"/health", b"/health/"]  # its own two spellings of /health, no Location
    f = found["LAY008"]
    assert "HTTP 302" in f.message and "redirect (not followed)" in f.message
    assert "169.254" not in _text(found)


def test_a_trl_server_that_redirects_health_to_its_slash_form_is_healthy(attempts):
    def handle(conn, request, _stop):
        path = request.split(b" ")[1]
        if path == b"/health":  # FastAPI's redirect_slashes; the Location is never read
            reply("307 Temporary Redirect", headers={"Location": "http://10.1.2.3/"})(conn, request, _stop)
        else:
            reply("200 OK", b'{"status": "ok"}')(conn, request, _stop)

    with tcp_server(handle) as (port, _requests):
        found = live_check(
            {"vllm_server_host": "127.0.0.1", "vllm_server_port": port}, rules=("LAY008", "LAY013")
        )
    assert found == {} and not attempts.non_loopback()


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(
            {"Code": "Success", "AccessKeyId": "ASIA-canary", "SecretAccessKey": SECRET, "Token": SECRET}
        ).encode(),
        f"aws_secret_access_key={SECRET}\n".encode(),
        f"<html><body>{SECRET}</body></html>".encode(),
    ],
)
def test_a_body_is_classified_never_quoted(body, attempts):
    with tcp_server(reply("200 OK", body)) as (port, _requests):
        found = live_check({"vllm_server_host": "127.0.0.1", "vllm_server_port": port})
    f = found["LAY008"]
    assert "not like a TRL vLLM server" in f.message and f"{len(body)} bytes" in f.message
    assert SECRET not in _text(found) and "canary" not in _text(found)
    assert "Success" not in _text(found) and "aws_secret" not in _text(found)


def test_a_server_sending_one_byte_a_second_is_given_up_at_the_deadline(attempts):
    def slowloris(conn, _request, stop):
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 600:
            if stop.is_set():
                return
            conn.sendall(bytes([byte]))
            time.sleep(1.0)

    with tcp_server(slowloris) as (port, _requests):
        found = live_check({"vllm_server_host": "127.0.0.1", "vllm_server_port": port}, rules=("LAY008",))
    f = found["LAY008"]
    assert "timed out" in f.message and "within 3 s" in f.message
    assert not attempts.non_loopback()


def test_an_endless_body_is_capped(attempts):
    def endless(conn, _request, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        while not stop.is_set():
            conn.sendall(b"x" * 65536)

    with tcp_server(endless) as (port, _requests):
        found = live_check({"vllm_server_host": "127.0.0.1", "vllm_server_port": port}, rules=("LAY008",))
    assert "larger than 64 KiB" in found["LAY008"].message


def test_healthy_servers_of_both_kinds_are_quiet(attempts):
    for body, trl in ((b'{"status": "ok"}', "1.10.0"), (b"", "1.16.0")):
        with tcp_server(reply("200 OK", body)) as (port, requests):
            found = live_check(
                {"vllm_server_host": "127.0.0.1", "vllm_server_port": port},
                trl=trl,
                rules=("LAY008", "LAY013"),
            )
        assert found == {} and len(requests) == 1
    assert not attempts.non_loopback()


def test_a_redirect_that_keeps_the_connection_open_is_read_to_its_head_only(attempts):
    def open_redirect(conn, _request, stop):
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\n\r\n")
        stop.wait(30)  # no length, no close: the status line and headers are all it needs

    with tcp_server(open_redirect) as (port, _requests):
        found = live_check({"vllm_server_host": "127.0.0.1", "vllm_server_port": port}, rules=("LAY008",))
    assert "HTTP 302" in found["LAY008"].message and "timed out" not in found["LAY008"].message
    assert not attempts.non_loopback()
