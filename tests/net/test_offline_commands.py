"""Commands that make no connection at all, not even to loopback, and look no name up: `check
--facts`, `check --no-network`, hook, triage, plan-memory, collect, diff, rules, explain; and
`--allow-host` is checked as input. Runs in a network namespace with only ``lo`` up (conftest)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT

SEED = ROOT / "examples" / "seed-000"
METADATA_CFG = {
    "use_vllm": True,
    "vllm_mode": "server",
    "vllm_server_host": "169.254.169.254",
    "vllm_server_port": 80,
    "model_name_or_path": "Qwen/Qwen2.5-0.5B",
}


def _run(*args: str) -> int:
    from envdoctor.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.fixture
def cfg(tmp_path):
    path = tmp_path / "grpo.json"
    path.write_text(json.dumps(METADATA_CFG))
    return str(path)


def _triage_log() -> str:
    return str(next(iter(sorted((ROOT / "tests" / "triage" / "logs").glob("*.log")))))


@pytest.mark.parametrize(
    "name",
    [
        "check --facts",
        "check --no-network",
        "hook",
        "triage",
        "plan-memory",
        "collect",
        "diff",
        "rules",
        "explain",
    ],
)
def test_the_command_makes_no_connection(name, cfg, tmp_path, attempts, capsys):
    facts = str(SEED / "facts.json")
    argv = {
        "check --facts": ["check", "--facts", facts, "--config", cfg, "--", "python", "t.py"],
        "check --no-network": ["check", "--no-network", "--config", cfg, "--", "python", "t.py"],
        "hook": ["hook", "--assume", "trl==1.16.0", cfg],
        "triage": ["triage", _triage_log()],
        "plan-memory": ["plan-memory", "--config", cfg, "--", "python", "t.py"],
        "collect": ["collect", "-o", str(tmp_path / "facts.json")],
        "diff": ["diff", facts, facts],
        "rules": ["rules"],
        "explain": ["explain", "LAY013"],
    }[name]
    code = _run(*argv)
    out = capsys.readouterr()
    assert "Traceback" not in out.err and code in (0, 1, 2), (code, out.err[-2000:])
    assert attempts.connects == [] and attempts.lookups == []


@pytest.mark.parametrize("bad", ["http://10.1.2.3/", "10.1.2.3:8000", "*", "", "a b"])
def test_allow_host_takes_a_host_only(bad, capsys):
    code = _run("check", "--facts", str(SEED / "facts.json"), "--allow-host", bad)
    assert code == 2 and "--allow-host" in capsys.readouterr().err


def test_preflight_allow_hosts_is_checked_as_input():
    import envdoctor

    with pytest.raises(envdoctor.PreflightError, match="allow_hosts"):
        envdoctor.preflight(facts=str(SEED / "facts.json"), allow_hosts="10.1.2.3")
    with pytest.raises(envdoctor.PreflightError, match="allow_hosts"):
        envdoctor.preflight(facts=str(SEED / "facts.json"), allow_hosts=["http://x/"])
