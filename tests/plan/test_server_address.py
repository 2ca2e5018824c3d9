"""One server address resolver (plan.interface.server_address), used by the rules and triage."""

from __future__ import annotations

from envdoctor.plan.interface import DEFAULT_SERVER_HOST, DEFAULT_SERVER_PORT, ServerPlan, server_address


def test_defaults_are_trls():
    assert server_address({}, None) == (DEFAULT_SERVER_HOST, DEFAULT_SERVER_PORT) == ("0.0.0.0", 8000)
    assert (ServerPlan().host, ServerPlan().port) == ("0.0.0.0", 8000)


def test_config_wins_over_the_server_found_and_a_base_url_over_the_host():
    srv = ServerPlan(host="127.0.0.1", port=8123)
    assert server_address({}, srv) == ("127.0.0.1", 8123)
    assert server_address({"vllm_server_port": 9000}, srv) == ("127.0.0.1", 9000)
    assert server_address({"vllm_server_host": "10.0.0.2"}, srv) == ("10.0.0.2", 8123)
    assert server_address({"vllm_server_base_url": "http://10.0.0.2:8000"}, srv)[0] == "http://10.0.0.2:8000"


def test_a_port_that_is_no_number_falls_back_to_the_default():
    assert server_address({"vllm_server_port": "eighty"}, None) == ("0.0.0.0", 8000)
