"""The probe's processes send no DNS query (issue 37): glibc's resolver is told to make zero
attempts, the user's own resolver options kept, and c10d's note about the name it then cannot
look up is left out of the log tails the probe reports. tests/net/test_probe_contacts.py
watches a real probe with strace."""

from __future__ import annotations

import pytest

from envdoctor.probe.interface import ProbeResult, ProbeSpec
from envdoctor.probe.run import runner
from envdoctor.probe.stage.staging import NO_DNS_NOTICE, loopback_env


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, "attempts:0"),
        ("", "attempts:0"),
        ("ndots:2 timeout:1", "ndots:2 timeout:1 attempts:0"),
        ("attempts:5", "attempts:5 attempts:0"),  # glibc: the last setting wins
    ],
)
def test_the_probes_processes_make_no_dns_attempt_keeping_the_users_options(before, after):
    env = {} if before is None else {"RES_OPTIONS": before}
    spec = ProbeSpec(launcher=["python"])
    loopback_env(env, {"MASTER_ADDR": "127.0.0.1"}, spec)
    assert env["RES_OPTIONS"] == after
    loopback_env(env, {"MASTER_ADDR": "127.0.0.1"}, spec)  # the server's env may pass twice
    assert env["RES_OPTIONS"] == after


def test_c10ds_note_about_the_unlooked_up_name_is_not_in_the_log_tail(tmp_path):
    note = f"[W1128 02:56:47.679651932 socket.cpp:207] {NO_DNS_NOTICE}. err=-3"
    (tmp_path / "probe.log").write_text(
        "\n".join(["starting", note, "ENVDOCTOR_PHASE step", "RuntimeError: boom", note]) + "\n"
    )
    result = ProbeResult(status="ran")
    runner._collect(tmp_path, result)
    assert result.log_tail == "starting\nRuntimeError: boom"
    assert runner._tail(f"a\n{note}\nb", 40) == "a\nb"
