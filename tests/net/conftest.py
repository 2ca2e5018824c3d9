"""Network tests run in a network namespace of their own, with only loopback up.

Outside such a namespace, each test module's selected tests are run once more inside
``unshare -n`` (``ip link set lo up``, then pytest), and every test reports the outcome it had
there: not a packet can leave the machine, whatever the code under test tries. Where a network
namespace cannot be made (no ``unshare``, not permitted), the tests are skipped, saying so.

The ``attempts`` fixture records every ``connect()`` and name lookup made in the test's process,
so a test can assert that no connection to a non-loopback address was even attempted.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSIDE = "ENVDOCTOR_TEST_NETNS"
_outcomes: dict[Path, dict[str, tuple[str, str]]] = {}


def only_loopback() -> bool:
    """Whether this process's network namespace has no interface but ``lo``."""
    return [name for _index, name in socket.if_nameindex()] == ["lo"]


def _unshare() -> list[str] | None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return None
    for cmd in (["unshare", "-n"], ["unshare", "-rn"]):  # as root, or in a user namespace
        try:
            done = subprocess.run([*cmd, "sh", "-c", "ip link set lo up"], capture_output=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return cmd
    return None


def _run_isolated(item: pytest.Item) -> dict[str, tuple[str, str]]:
    """Run the selected tests of ``item``'s module in a namespace with only ``lo`` up."""
    cmd = _unshare()
    ids = [i.nodeid for i in item.session.items if i.path == item.path]
    if cmd is None:
        why = (
            "network tests run only in a network namespace of their own (unshare -n, only lo "
            "up), and none can be made here (no unshare / ip, or not permitted)"
        )
        return {i: ("skipped", why) for i in ids}
    with tempfile.TemporaryDirectory(prefix="envdoctor-netns-") as tmp:
        xml = Path(tmp) / "junit.xml"
        env = {
            **os.environ,
            INSIDE: "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        done = subprocess.run(
            [
                *cmd,
                "sh",
                "-c",
                'ip link set lo up && exec "$@"',
                "sh",
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={xml}",
                *ids,
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if not xml.exists():
            return {
                i: (
                    "failed",
                    f"the namespace run did not report (exit {done.returncode}):\n"
                    f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}",
                )
                for i in ids
            }
        cases = {}
        for case in ET.parse(xml).iter("testcase"):
            outcome, text = "passed", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome, text = "failed", (child.get("message") or "") + "\n" + (child.text or "")
                elif child.tag == "skipped":
                    outcome, text = "skipped", child.get("message") or ""
            cases[case.get("name", "")] = (outcome, text)
    return {i: cases.get(i.split("::", 1)[-1], ("failed", "not reported by the namespace run")) for i in ids}


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if only_loopback():
        return None  # already isolated: run the test here
    if os.environ.get(INSIDE):
        pytest.fail("in the test namespace, yet interfaces other than lo are up", pytrace=False)
    if pyfuncitem.path not in _outcomes:
        _outcomes[pyfuncitem.path] = _run_isolated(pyfuncitem)
    outcome, text = _outcomes[pyfuncitem.path].get(pyfuncitem.nodeid, ("failed", "not run"))
    if outcome == "skipped":
        pytest.skip(text)
    if outcome != "passed":
        pytest.fail(f"in its network namespace (only lo up):\n{text}", pytrace=False)
    return True


# --- observing what the code under test tries ----------------------------------------------------


class Attempts:
    """Every ``connect()`` (address) and name lookup (host) made in this process."""

    def __init__(self) -> None:
        self.connects: list[tuple] = []
        self.lookups: list[str] = []

    def non_loopback(self) -> list[tuple]:
        return [a for a in self.connects if not _is_loopback(a)]


def _is_loopback(address: object) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False  # a name: never passed to connect() by the policy


@pytest.fixture
def attempts(monkeypatch) -> Attempts:
    seen = Attempts()
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_gai, real_byname = socket.getaddrinfo, socket.gethostbyname

    def connect(self, address):
        seen.connects.append(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        seen.connects.append(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        seen.lookups.append(host)
        return real_gai(host, *args, **kwargs)

    def gethostbyname(host):
        seen.lookups.append(host)
        return real_byname(host)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "gethostbyname", gethostbyname)
    return seen
