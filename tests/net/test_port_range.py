"""A port outside 0–65535 in the server's launch line or the config (issue 37): LAY008, LAY012
and LAY013 failed internally ("OverflowError: connect(): port must be 0-65535"); now nothing is
contacted and LAY014 names the launch line or key and the range."""

from __future__ import annotations

import pytest

from tests.conftest import MODERN, findings, snapshot
from tests.net.test_server_check import live_check

SERVER = "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m --port {port}"
TRAINER = "CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1 t.py"
CONFIG = {"use_vllm": True, "vllm_mode": "server"}


def _live_with_launch(port: str) -> dict:
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.plan.build import build_plan

    facts = from_dict(snapshot(2, packages=MODERN), "x")
    facts.source = "live"
    launch = SERVER.format(port=port) + " ; " + TRAINER
    plan = build_plan(config_dict=CONFIG, launch=launch, live=False)
    ctx = Context(facts=facts, plan=plan, network=True)
    return {f.rule: f for f in run_rules(ctx).findings}


@pytest.mark.parametrize("port", ["99999999", "65536", "-1", "9" * 30])
def test_a_server_port_out_of_range_is_a_finding_about_the_launch_line(port, attempts):
    found = _live_with_launch(port)
    assert not [f for f in found.values() if "failed internally" in f.message], found
    f = found["LAY014"]
    assert f.severity.value == "error" and "--port" in f.message and "0–65535" in f.message
    assert "trl vllm-serve" in f.message + f.fix
    assert [a for a in attempts.connects if a[1] != 51216] == []  # only LAY009's group port


@pytest.mark.parametrize("key", ["vllm_server_port", "vllm_group_port"])
def test_a_config_port_out_of_range_is_an_input_error_naming_the_key(key, attempts):
    from envdoctor.errors import InputError

    with pytest.raises(InputError, match=key):
        live_check({key: 99999999}, rules=("LAY008", "LAY009", "LAY012", "LAY013", "LAY014"))
    assert attempts.connects == []


def test_ports_in_range_are_quiet():
    snap = snapshot(2)
    launch = SERVER.format(port="8001") + " ; " + TRAINER
    assert "LAY014" not in {f.rule for f in findings(snap, config=CONFIG, launch=launch)}
    assert "LAY014" not in {f.rule for f in findings(snap, config={**CONFIG, "vllm_server_port": 8000})}
