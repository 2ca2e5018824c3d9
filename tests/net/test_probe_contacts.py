"""What a one-node probe launched with a remote ``--master_addr`` contacts (issue 37), seen by
``strace -f`` on every process it starts, in a network namespace with only ``lo`` up (conftest).

The rendezvous is rewritten to 127.0.0.1 before torchrun starts: 10.255.255.1 is never dialled.
Nor is the resolver: c10d's ``formatSockAddr`` (torch/csrc/distributed/c10d/socket.cpp) calls
``getnameinfo()`` without ``NI_NUMERICHOST`` on the store's v4-mapped address
``::ffff:127.0.0.1``, which /etc/hosts does not hold in that form, so glibc would ask DNS for the
PTR of 127.0.0.1 in torchrun's agent and in every rank; the probe's processes run with
``RES_OPTIONS=attempts:0`` (docs/reliability.md), so glibc's resolver sends no query at all."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.net.conftest import ROOT

REMOTE = "10.255.255.1"
_CONNECT = re.compile(
    r'connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\((\d+)\),.*?(?:inet_addr\("([^"]+)"\)|'
    r'inet_pton\(AF_INET6, "([^"]+)")'
)


def _loopback(host: str) -> bool:
    return host.startswith("127.") or host in ("::1", "::ffff:127.0.0.1") or host.startswith("::ffff:127.")


def test_a_one_node_probe_contacts_only_loopback_and_asks_no_resolver(tmp_path):
    pytest.importorskip("torch")
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("needs strace to see the probe's child processes")
    code = (
        "import sys; from envdoctor.probe.run.runner import ProbeSpec, run_probe; "
        "r = run_probe(ProbeSpec(launcher=[sys.executable, '-m', 'torch.distributed.run', "
        f"'--nnodes', '1', '--nproc_per_node', '1', '--master_addr', '{REMOTE}', "
        "'--master_port', '29523'], fault='exit', timeout_s=90)); "
        "print('STATUS', r.status, 0 in r.ranks); print('NOTE', 'cannot be retrieved' in r.log_tail)"
    )
    trace = tmp_path / "trace.txt"
    done = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(trace)]
        + [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert "STATUS fail True" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "NOTE False" in done.stdout  # c10d's note on the name it could not look up: not reported
    dialled = []
    for m in _CONNECT.finditer(trace.read_text(errors="replace")):
        port, host = int(m.group(1)), m.group(2) or m.group(3)
        if not _loopback(host):
            dialled.append((host, port))
    assert dialled == [], dialled  # not the launch line's host, not the resolver (port 53)
    text = trace.read_text(errors="replace")
    assert "htons(53)" not in text, [ln for ln in text.splitlines() if "htons(53)" in ln]
